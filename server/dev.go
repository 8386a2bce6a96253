package server

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/toolgate/toolgate/toolgatetype"
)

// The development setup's identities: DevPrincipal approves its own calls;
// DevAgent is an agent in approver mode, whose calls DevApprover approves.
const (
	DevPrincipal = "dev"
	DevAgent     = "agent"
	DevApprover  = "you"
)

// DevKeys are the development setup's keys, as a keys file keeps them.
type DevKeys struct {
	Principal string `json:"principalKey"`
	Agent     string `json:"agentKey"`
	Approver  string `json:"approverKey"`
}

// LoadDevKeys returns the development setup's keys: fresh ones, or, with
// file, the ones it keeps, made and written there on first use, readable
// by its owner only. Errors name neither the file, which the caller names,
// nor a key.
func LoadDevKeys(file string) (DevKeys, error) {
	if file == "" {
		return freshDevKeys()
	}
	keys, err := readDevKeys(file)
	if errors.Is(err, fs.ErrNotExist) {
		keys, err = createDevKeys(file)
		if errors.Is(err, fs.ErrExist) {
			// Another start made it meanwhile: use its keys.
			keys, err = readDevKeys(file)
		}
	}
	return keys, err
}

// freshDevKeys makes three random keys.
func freshDevKeys() (DevKeys, error) {
	var keys [3]string
	for i, prefix := range []string{"tg_dev_", "tg_dev_agent_", "tg_dev_approver_"} {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return DevKeys{}, fmt.Errorf("generate a development key: %w", err)
		}
		keys[i] = prefix + hex.EncodeToString(b)
	}
	return DevKeys{Principal: keys[0], Agent: keys[1], Approver: keys[2]}, nil
}

// createDevKeys writes fresh keys to a new file only its owner can read:
// fs.ErrExist when the file is there already.
func createDevKeys(file string) (DevKeys, error) {
	keys, err := freshDevKeys()
	if err != nil {
		return DevKeys{}, err
	}
	data, err := json.MarshalIndent(keys, "", "  ")
	if err != nil {
		return DevKeys{}, err
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return DevKeys{}, fileError(err)
	}
	_, werr := f.Write(append(data, '\n'))
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		os.Remove(file) // a half-written file would fail every later start
		return DevKeys{}, fmt.Errorf("cannot write the keys: %w", fileError(err))
	}
	return keys, nil
}

// readDevKeys reads the keys a keys file keeps. The file must be
// readable by its owner only, as createDevKeys makes it: the keys spend
// and approve.
func readDevKeys(file string) (DevKeys, error) {
	info, err := os.Stat(file)
	if err != nil {
		return DevKeys{}, fileError(err)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return DevKeys{}, fmt.Errorf("others can read or change it (mode %04o); make it yours alone with chmod 600", perm)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return DevKeys{}, fileError(err)
	}
	var keys DevKeys
	// The decoder's errors may quote the file's text, keys and all.
	if json.Unmarshal(data, &keys) != nil || !keys.valid() {
		return DevKeys{}, errors.New(`is not a development keys file: a JSON object with "principalKey", "agentKey" and "approverKey", three different keys; remove it to make a new one`)
	}
	return keys, nil
}

// valid reports whether the keys are three different keys the server
// accepts: visible ASCII, no spaces, at most maxKeyLen bytes.
func (k DevKeys) valid() bool {
	all := []string{k.Principal, k.Agent, k.Approver}
	for i, key := range all {
		if key == "" || len(key) > maxKeyLen || strings.ContainsFunc(key, func(r rune) bool { return r <= ' ' || r > '~' }) {
			return false
		}
		for _, other := range all[:i] {
			if other == key {
				return false
			}
		}
	}
	return true
}

// fileError is err without the path, which the caller's message names.
func fileError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// DevConfig is the development setup's config, with keys: the default
// address, the memory store, the built-in tools, DevPrincipal in caller
// mode, and DevAgent in approver mode with DevApprover approving its calls.
func DevConfig(keys DevKeys) *Config {
	return &Config{
		Listen:       defaultListen,
		Storage:      storageMemory,
		BuiltinTools: true,
		Principals: []Principal{
			{ID: DevPrincipal, APIKeys: []string{keys.Principal}},
			{ID: DevAgent, APIKeys: []string{keys.Agent}, ApprovalMode: toolgatetype.ApprovalModeApprover},
		},
		Approvers: []Approver{{ID: DevApprover, Keys: []string{keys.Approver}, Principals: []string{DevAgent}}},
	}
}
