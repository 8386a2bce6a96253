package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/toolgate/toolgate/toolgatetype"
)

// The development setup's identities: devPrincipal approves its own calls;
// devAgent is an agent in approver mode, whose calls devApprover approves.
const (
	devPrincipal = "dev"
	devAgent     = "agent"
	devApprover  = "you"
)

// devKeys are the development setup's keys, as a -dev-keys file keeps them.
type devKeys struct {
	Principal string `json:"principalKey"`
	Agent     string `json:"agentKey"`
	Approver  string `json:"approverKey"`
}

// devSetup is the setup used when no config file is given: its keys, and
// the file that keeps them, if any.
type devSetup struct {
	keys devKeys
	file string // "" when the keys are new on every start
}

// newDevSetup makes the development setup's keys: fresh ones, or, with
// file, the ones it keeps, made and written there on first use. Errors
// name the file, never a key.
func newDevSetup(file string) (*devSetup, error) {
	if file == "" {
		keys, err := freshDevKeys()
		return &devSetup{keys: keys}, err
	}
	keys, err := readDevKeys(file)
	if errors.Is(err, fs.ErrNotExist) {
		keys, err = createDevKeys(file)
		if errors.Is(err, fs.ErrExist) {
			// Another start made it meanwhile: use its keys.
			keys, err = readDevKeys(file)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("-dev-keys %s: %w", file, err)
	}
	return &devSetup{keys: keys, file: file}, nil
}

// freshDevKeys makes three random keys.
func freshDevKeys() (devKeys, error) {
	var keys [3]string
	for i, prefix := range []string{"tg_dev_", "tg_dev_agent_", "tg_dev_approver_"} {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return devKeys{}, fmt.Errorf("generate a development key: %w", err)
		}
		keys[i] = prefix + hex.EncodeToString(b)
	}
	return devKeys{Principal: keys[0], Agent: keys[1], Approver: keys[2]}, nil
}

// createDevKeys writes fresh keys to a new file only its owner can read:
// fs.ErrExist when the file is there already.
func createDevKeys(file string) (devKeys, error) {
	keys, err := freshDevKeys()
	if err != nil {
		return devKeys{}, err
	}
	data, err := json.MarshalIndent(keys, "", "  ")
	if err != nil {
		return devKeys{}, err
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return devKeys{}, fileError(err)
	}
	_, werr := f.Write(append(data, '\n'))
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		os.Remove(file) // a half-written file would fail every later start
		return devKeys{}, fmt.Errorf("cannot write the keys: %w", fileError(err))
	}
	return keys, nil
}

// readDevKeys reads the keys a -dev-keys file keeps. The file must be
// readable by its owner only, as createDevKeys makes it: the keys spend
// and approve.
func readDevKeys(file string) (devKeys, error) {
	info, err := os.Stat(file)
	if err != nil {
		return devKeys{}, fileError(err)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return devKeys{}, fmt.Errorf("others can read or change it (mode %04o); make it yours alone with chmod 600", perm)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return devKeys{}, fileError(err)
	}
	var keys devKeys
	// The decoder's errors may quote the file's text, keys and all.
	if json.Unmarshal(data, &keys) != nil || !keys.valid() {
		return devKeys{}, errors.New(`is not a development keys file: a JSON object with "principalKey", "agentKey" and "approverKey", three different keys; remove it to make a new one`)
	}
	return keys, nil
}

// valid reports whether the keys are three different keys the server
// accepts: visible ASCII, no spaces, at most maxKeyLen bytes.
func (k devKeys) valid() bool {
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

// config is the development setup's config: the default address, the
// memory store, devPrincipal in caller mode, and devAgent in approver mode
// with devApprover approving its calls.
func (d *devSetup) config() *Config {
	return &Config{
		Listen:  defaultListen,
		Storage: storageMemory,
		Principals: []Principal{
			{ID: devPrincipal, APIKeys: []string{d.keys.Principal}},
			{ID: devAgent, APIKeys: []string{d.keys.Agent}, ApprovalMode: toolgatetype.ApprovalModeApprover},
		},
		Approvers: []Approver{{ID: devApprover, Keys: []string{d.keys.Approver}, Principals: []string{devAgent}}},
	}
}

// printHelp tells a developer the keys and how to use them, on stdout:
// the keys are theirs to copy, and never go to the logs on stderr. The
// commands need only sh, curl and sed, and are the README's. Offline, the
// example is a paid call of goal-data, whose demo provider is answered in
// process and counted as verified; with live upstreams, a free call.
func (d *devSetup) printHelp(w io.Writer, baseURL string, offline bool) {
	kept := "new on every start; -dev-keys FILE keeps them"
	if d.file != "" {
		kept = "kept in " + d.file
	}
	upstreams := "live upstreams"
	if offline {
		upstreams = "recorded upstream answers (offline)"
	}
	lines := []string{
		"",
		"Development setup: in-memory store, " + upstreams + ", one API key for principal \"" + devPrincipal + "\" (" + kept + "):",
		"",
		"  export TOOLGATE_KEY=" + d.keys.Principal,
		"",
	}
	if offline {
		lines = append(lines,
			"Offline, goal-data's demo provider is answered in process and counted as payment- and endpoint-verified,",
			"so its paid calls can be tried: 0.1000 USD and a 0.0100 USD fee each. Quote one, make it with the quote's",
			"id and the manifest digest you approve, then see what you spent:",
			"",
			`  QUOTE=$(curl -s -X POST `+baseURL+`/v1/tools/goal-data/quote -H "Authorization: Bearer $TOOLGATE_KEY"); echo "$QUOTE"`,
			`  QUOTE_ID=$(echo "$QUOTE" | sed 's/.*"quote":{"id":"\([^"]*\)".*/\1/'); DIGEST=$(echo "$QUOTE" | sed 's/.*"manifestDigest":"\([^"]*\)".*/\1/')`,
			`  curl -s -X POST `+baseURL+`/v1/tools/goal-data/call -H "Authorization: Bearer $TOOLGATE_KEY" -H "Content-Type: application/json" -H "Idempotency-Key: call-$QUOTE_ID" -d '{"quoteId":"'"$QUOTE_ID"'","input":{"goal":"reach the summit","step":1},"approval":{"manifestDigest":"'"$DIGEST"'"}}'; echo`,
			`  curl -s `+baseURL+`/v1/spend -H "Authorization: Bearer $TOOLGATE_KEY"; echo`,
		)
	} else {
		lines = append(lines,
			"Quote a call, then make it with the quote's id and the manifest digest you approve:",
			"",
			`  QUOTE=$(curl -s -X POST `+baseURL+`/v1/tools/earthquake-search/quote -H "Authorization: Bearer $TOOLGATE_KEY"); echo "$QUOTE"`,
			`  QUOTE_ID=$(echo "$QUOTE" | sed 's/.*"quote":{"id":"\([^"]*\)".*/\1/'); DIGEST=$(echo "$QUOTE" | sed 's/.*"manifestDigest":"\([^"]*\)".*/\1/')`,
			`  curl -s -X POST `+baseURL+`/v1/tools/earthquake-search/call -H "Authorization: Bearer $TOOLGATE_KEY" -H "Content-Type: application/json" -H "Idempotency-Key: call-$QUOTE_ID" -d '{"quoteId":"'"$QUOTE_ID"'","input":{"starttime":"2024-09-25"},"approval":{"manifestDigest":"'"$DIGEST"'"}}'; echo`,
			"",
			"Paid calls need a verified provider: -offline counts goal-data's demo provider as one.",
		)
	}
	lines = append(lines,
		"",
		"The tools: "+baseURL+"/v1/registry/tools",
		"Agents over MCP: "+baseURL+"/mcp, with the header Authorization: Bearer $TOOLGATE_KEY",
		"",
		"Approver mode: principal \""+devAgent+"\" asks, you approve as approver \""+devApprover+"\" ("+kept+"):",
		"",
		"  export TOOLGATE_AGENT_KEY="+d.keys.Agent,
		"  export TOOLGATE_APPROVER_KEY="+d.keys.Approver,
		"",
		"The agent's approval requests wait for you at "+baseURL+"/approvals (sign in with the approver key);",
		"the README's \"Approver mode\" section walks through them.",
		"",
	)
	fmt.Fprint(w, strings.Join(lines, "\n"))
}
