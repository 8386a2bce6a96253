package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql's "pgx" driver
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// receiptStore is where a receipts test's server keeps its data, and a
// connection of the test's own to it, for what an intruder with access to
// the database would do.
type receiptStore struct {
	name    string
	storage string // the config's "storage"
	db      *sql.DB
	// dollar: PostgreSQL's $1 placeholders; SQLite takes ?.
	dollar bool
}

func (s receiptStore) q(query string) string {
	if !s.dollar {
		return query
	}
	for i := 1; strings.Contains(query, "?"); i++ {
		query = strings.Replace(query, "?", "$"+strconv.Itoa(i), 1)
	}
	return query
}

func receiptStores(t *testing.T) []receiptStore {
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "receipts.db")
	stores := []receiptStore{{name: "sqlite", storage: "sqlite:" + dbPath}}
	if url := os.Getenv("TOOLGATE_TEST_POSTGRES_URL"); url != "" {
		stores = append(stores, receiptStore{name: "postgres", storage: url, dollar: true})
	} else if os.Getenv("CI") != "" {
		t.Fatal("TOOLGATE_TEST_POSTGRES_URL must be set in CI")
	}
	return stores
}

// open connects the test to the store, once the server has created it.
func (s *receiptStore) open(t *testing.T) {
	t.Helper()
	var err error
	if s.dollar {
		s.db, err = sql.Open("pgx", s.storage)
	} else {
		s.db, err = sql.Open("sqlite", strings.TrimPrefix(s.storage, "sqlite:")+"?_pragma=busy_timeout(5000)")
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.db.Close() })
}

// writeSigningKey writes a new Ed25519 key in PKCS#8 PEM, mode 600, and
// its public half beside it; it returns both paths and the private key's
// PEM body, which must never be seen again.
func writeSigningKey(t *testing.T, dir, name string) (keyFile, pubFile, secret string) {
	t.Helper()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	keyFile = filepath.Join(dir, name+".pem")
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600))
	pubDER, err := x509.MarshalPKIXPublicKey(pub)
	require.NoError(t, err)
	pubFile = filepath.Join(dir, name+".pub.pem")
	require.NoError(t, os.WriteFile(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644))
	return keyFile, pubFile, base64.StdEncoding.EncodeToString(der)
}

// runCLI runs the toolgate binary with args and env, and returns its exit
// code and its output.
func runCLI(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(toolgateBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if exit, ok := err.(*exec.ExitError); ok {
		return exit.ExitCode(), string(out)
	}
	require.NoError(t, err)
	return 0, string(out)
}

// TestReceiptsProveWhatWasSpent runs the server binary on SQLite and, when
// it is there, PostgreSQL: two server processes on one store take 200
// concurrent calls of one principal, one of them killed with SIGKILL while
// calls are in flight; the chain is gapless and verifies, from the server
// and from an exported file checked with nothing but the key document; no
// finished execution lacks its receipt and no receipt its execution. Then
// what an intruder with the database would do (change a receipt's price,
// status, input or output hash, delete one, swap two) is each found by
// verify, which exits 1 naming the seq. A rotation keeps the old receipts
// verifiable.
func TestReceiptsProveWhatWasSpent(t *testing.T) {
	t.Parallel()
	for _, store := range receiptStores(t) {
		t.Run(store.name, func(t *testing.T) {
			t.Parallel()
			testReceiptsOn(t, store)
		})
	}
}

func testReceiptsOn(t *testing.T, store receiptStore) {
	dir := t.TempDir()
	oldKey, oldPub, oldSecret := writeSigningKey(t, dir, "old")
	newKey, _, newSecret := writeSigningKey(t, dir, "new")
	apiKey := randomKey(t, "tg_test_receipts_")
	principal := randomKey(t, "receipts-")
	config := func(receipts map[string]any) string {
		return writeConfig(t, map[string]any{
			"listen":  "127.0.0.1:0",
			"storage": store.storage,
			"principals": []any{map[string]any{"id": principal, "apiKeys": []string{apiKey},
				"spendControls": map[string]any{"rateLimitPerMinute": 2000, "rateLimitPerHour": 5000}}},
			"receipts": receipts,
		})
	}
	first := config(map[string]any{"signingKeyFile": oldKey, "keyId": "2026-05"})
	a, baseA := startServer(t, []string{"-config", first, "-offline"})
	b, baseB := startServer(t, []string{"-config", first, "-offline"})
	store.open(t)
	env := []string{"TOOLGATE_API_KEY=" + apiKey}
	quake := map[string]any{"starttime": "2024-09-25"}

	// 200 calls at once, half through each instance; B is killed once 30
	// of its calls have finished, with others in flight.
	var wg sync.WaitGroup
	var finishedOnB atomic.Int64
	for i := range 200 {
		onB := i%2 == 1
		base := baseA
		if onB {
			base = baseB
		}
		wg.Go(func() {
			c := client{t: t, base: base, key: apiKey}
			r, err := c.send(http.MethodPost, "/v1/tools/earthquake-search/quote", nil)
			if err != nil || r.status != http.StatusCreated {
				return // B is gone
			}
			q := r.json(t)["quote"].(map[string]any)
			r, err = c.sendCall("earthquake-search", q["id"].(string), q["manifestDigest"].(string), "k-"+strconv.Itoa(i), quake)
			if onB && err == nil && r.status == http.StatusOK && finishedOnB.Add(1) == 30 {
				_ = b.cmd.Process.Signal(syscall.SIGKILL)
			}
		})
	}
	wg.Wait()
	b.wait(exitTimeout)

	var finished, receipts, orphans, unreceipted int
	require.NoError(t, store.db.QueryRow(store.q(`SELECT count(*) FROM executions WHERE principal = ? AND status <> 'running'`), principal).Scan(&finished))
	require.NoError(t, store.db.QueryRow(store.q(`SELECT count(*) FROM receipts WHERE principal = ?`), principal).Scan(&receipts))
	require.NoError(t, store.db.QueryRow(store.q(`SELECT count(*) FROM executions e WHERE e.principal = ? AND e.status <> 'running'
		AND NOT EXISTS (SELECT 1 FROM receipts r WHERE r.execution_id = e.id)`), principal).Scan(&unreceipted))
	require.NoError(t, store.db.QueryRow(store.q(`SELECT count(*) FROM receipts r WHERE r.principal = ?
		AND NOT EXISTS (SELECT 1 FROM executions e WHERE e.id = r.execution_id AND e.status <> 'running')`), principal).Scan(&orphans))
	assert.Zero(t, unreceipted, "a finished execution without its receipt")
	assert.Zero(t, orphans, "a receipt without its finished execution")
	assert.Equal(t, finished, receipts)
	assert.Greater(t, finished, 100, "most calls finished")
	t.Logf("%d of 200 calls finished before and after the kill", finished)

	code, out := runCLI(t, env, "receipts", "verify", "-url", baseA)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, fmt.Sprintf("ok: %d receipts of 1 principals verified", receipts))

	// The chain, exported, verifies with nothing but the key document.
	chainFile := filepath.Join(dir, "chain.jsonl")
	code, out = runCLI(t, env, "receipts", "export", "-url", baseA, "-o", chainFile)
	require.Equal(t, 0, code, out)
	keysDoc := client{t: t, base: baseA}.do(http.MethodGet, "/.well-known/toolgate-receipt-keys", nil)
	require.Equal(t, http.StatusOK, keysDoc.status)
	keysFile := filepath.Join(dir, "keys.json")
	require.NoError(t, os.WriteFile(keysFile, keysDoc.body, 0o644))
	code, out = runCLI(t, nil, "receipts", "verify", "-file", chainFile, "-keys", keysFile)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, fmt.Sprintf("ok: %d receipts", receipts))

	// What someone with the database could do, each undone after.
	read := func(seq int) []byte {
		var signed []byte
		require.NoError(t, store.db.QueryRow(store.q(`SELECT signed FROM receipts WHERE principal = ? AND seq = ?`), principal, seq).Scan(&signed))
		return signed
	}
	write := func(seq int, signed []byte) {
		_, err := store.db.Exec(store.q(`UPDATE receipts SET signed = ? WHERE principal = ? AND seq = ?`), signed, principal, seq)
		require.NoError(t, err)
	}
	edit := func(seq int, from, to string) func() {
		return func() {
			signed := read(seq)
			require.Contains(t, string(signed), from)
			write(seq, []byte(strings.Replace(string(signed), from, to, 1)))
		}
	}
	outputHash := func(seq int) string {
		s := string(read(seq))
		i := strings.Index(s, `"outputSha256":"`) + len(`"outputSha256":"`)
		return s[i : i+64]
	}
	for _, c := range []struct {
		name   string
		tamper func()
		seq    int
		check  string
	}{
		{"price", edit(40, `"priceUsd":"0.0000"`, `"priceUsd":"0.0100"`), 40, "signature"},
		{"status", edit(41, `"status":"completed"`, `"status":"failed"`), 41, "signature"},
		{"input hash", edit(42, `"inputSha256":"`, `"inputSha256":"0`), 42, "signature"},
		{"output hash", edit(43, outputHash(43), strings.Repeat("0", 64)), 43, "signature"},
		{"delete", func() {
			_, err := store.db.Exec(store.q(`DELETE FROM receipts WHERE principal = ? AND seq = ?`), principal, 44)
			require.NoError(t, err)
		}, 45, "sequence"},
		{"swap", func() {
			s46, s47 := read(46), read(47)
			write(46, s47)
			write(47, s46)
		}, 47, "sequence"},
	} {
		t.Run(c.name, func(t *testing.T) {
			type row struct {
				seq    int
				signed []byte
			}
			var saved []row
			for seq := 40; seq <= 47; seq++ {
				saved = append(saved, row{seq, read(seq)})
			}
			var hash string
			var execution []byte
			require.NoError(t, store.db.QueryRow(store.q(`SELECT hash, execution_id FROM receipts WHERE principal = ? AND seq = 44`), principal).Scan(&hash, &execution))
			c.tamper()
			code, out := runCLI(t, env, "receipts", "verify", "-url", baseA)
			assert.Equal(t, 1, code, out)
			assert.Contains(t, out, fmt.Sprintf("BROKEN at seq %d of %q", c.seq, principal))
			assert.Contains(t, out, "): "+c.check+": ")
			// Undone: the chain verifies again.
			if c.name == "delete" {
				_, err := store.db.Exec(store.q(`INSERT INTO receipts (principal, seq, execution_id, hash, signed) VALUES (?, ?, ?, ?, ?)`),
					principal, 44, execution, hash, saved[4].signed)
				require.NoError(t, err)
			}
			for _, r := range saved {
				write(r.seq, r.signed)
			}
			code, out = runCLI(t, env, "receipts", "verify", "-url", baseA)
			require.Equal(t, 0, code, out)
		})
	}

	// A rotation: the new key signs, the old one is listed as retired, and
	// the whole chain verifies.
	require.Equal(t, 0, a.stop(exitTimeout))
	second := config(map[string]any{"signingKeyFile": newKey, "keyId": "2026-11",
		"retiredKeys": []any{map[string]any{"keyId": "2026-05", "publicKeyFile": oldPub}}})
	a, baseA = startServer(t, []string{"-config", second, "-offline"})
	c := client{t: t, base: baseA, key: apiKey}
	for i := range 3 {
		q, digest, _ := c.quote("earthquake-search")
		r := c.call("earthquake-search", q, digest, "after-rotation-"+strconv.Itoa(i), quake)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		assert.Contains(t, string(r.body), `"keyId":"2026-11"`)
	}
	keysDoc = client{t: t, base: baseA}.do(http.MethodGet, "/.well-known/toolgate-receipt-keys", nil)
	assert.Contains(t, string(keysDoc.body), `"kid":"2026-11"`)
	assert.Contains(t, string(keysDoc.body), `"status":"retired"`)
	code, out = runCLI(t, nil, "receipts", "verify", "-url", baseA, "-key", apiKey)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, fmt.Sprintf("ok: %d receipts", receipts+3))
	// With the old key's document only, the new receipts are not the gateway's.
	code, out = runCLI(t, env, "receipts", "verify", "-url", baseA, "-keys", keysFile)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, fmt.Sprintf("BROKEN at seq %d", receipts+1))
	assert.Contains(t, out, "key")
	require.Equal(t, 0, a.stop(exitTimeout))

	// No secret is anywhere a caller or an operator's log can see, nor in
	// the receipts as stored (the exported file is them, byte for byte).
	exported, err := os.ReadFile(chainFile)
	require.NoError(t, err)
	for _, seen := range []string{string(exported), string(keysDoc.body), a.stderr.String(), b.stderr.String()} {
		assert.NotContains(t, seen, apiKey)
		assert.NotContains(t, seen, oldSecret[len(oldSecret)-40:])
		assert.NotContains(t, seen, newSecret[len(newSecret)-40:])
	}
}

// TestReceiptsCommandsRefuseMistakes: the usage mistakes of the two
// commands are one line and exit 2; a signing key others can read is
// refused at start.
func TestReceiptsCommandsRefuseMistakes(t *testing.T) {
	t.Parallel()
	code, out := runCLI(t, nil, "receipts", "verify")
	assert.Equal(t, 2, code, out)
	assert.Contains(t, out, "give one of -url URL and -file FILE")
	code, out = runCLI(t, nil, "receipts", "verify", "-file", "x.jsonl")
	assert.Equal(t, 2, code, out)
	assert.Contains(t, out, "-file needs -keys")
	code, out = runCLI(t, nil, "receipts", "export")
	assert.Equal(t, 2, code, out)
	code, out = runCLI(t, nil, "receipts", "export", "-h")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "a line of its own")

	dir := t.TempDir()
	keyFile, _, _ := writeSigningKey(t, dir, "open")
	require.NoError(t, os.Chmod(keyFile, 0o644))
	path := writeConfig(t, map[string]any{"listen": "127.0.0.1:0", "receipts": map[string]any{"signingKeyFile": keyFile}})
	p := startProcess(t, []string{"-config", path})
	assert.NotEqual(t, 0, p.wait(exitTimeout))
	assert.Contains(t, p.stderr.String(), "can be read by others")
}

// TestReceiptsVerifyReadsEachLineOneWay: an exported line means one thing
// to every reader. A line with two "receipt" members (a forged one first,
// which a reader keeping the first would show, the signed one last, which
// encoding/json keeps) is a break, as is a member the verifier does not
// know, at the top, in the signature or in the receipt, or one written in
// another case; each names the receipt, the member and the line. The file
// as exported still verifies.
func TestReceiptsVerifyReadsEachLineOneWay(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keyFile, _, _ := writeSigningKey(t, dir, "signing")
	apiKey := randomKey(t, "tg_test_receipts_")
	config := writeConfig(t, map[string]any{
		"listen":     "127.0.0.1:0",
		"storage":    "sqlite:" + filepath.Join(dir, "receipts.db"),
		"principals": []any{map[string]any{"id": "alice", "apiKeys": []string{apiKey}}},
		"receipts":   map[string]any{"signingKeyFile": keyFile, "keyId": "k1"},
	})
	p, base := startServer(t, []string{"-config", config, "-offline"})
	c := client{t: t, base: base, key: apiKey}
	for i := range 3 {
		q, digest, _ := c.quote("earthquake-search")
		r := c.call("earthquake-search", q, digest, "strict-"+strconv.Itoa(i), map[string]any{"starttime": "2024-09-25"})
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	}
	chainFile := filepath.Join(dir, "chain.jsonl")
	code, out := runCLI(t, []string{"TOOLGATE_API_KEY=" + apiKey}, "receipts", "export", "-url", base, "-o", chainFile)
	require.Equal(t, 0, code, out)
	keysDoc := client{t: t, base: base}.do(http.MethodGet, "/.well-known/toolgate-receipt-keys", nil)
	require.Equal(t, http.StatusOK, keysDoc.status)
	keysFile := filepath.Join(dir, "keys.json")
	require.NoError(t, os.WriteFile(keysFile, keysDoc.body, 0o644))
	require.Equal(t, 0, p.stop(exitTimeout))

	exported, err := os.ReadFile(chainFile)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(exported)), "\n")
	require.Len(t, lines, 3)
	code, out = runCLI(t, nil, "receipts", "verify", "-file", chainFile, "-keys", keysFile)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "ok: 3 receipts")

	second := lines[1]
	var envelope struct {
		Receipt json.RawMessage `json:"receipt"`
	}
	require.NoError(t, json.Unmarshal([]byte(second), &envelope))
	require.Contains(t, string(envelope.Receipt), `"status":"completed"`)
	forged := strings.Replace(string(envelope.Receipt), `"status":"completed"`, `"status":"failed"`, 1)
	for _, c := range []struct {
		name, line, says string
	}{
		{"two receipts, a forged one first", `{"receipt":` + forged + `,` + second[1:], `BROKEN at receipt 2: format: duplicate field "receipt"`},
		{"a member it does not know", second[:len(second)-1] + `,"note":"paid in full"}`, `BROKEN at receipt 2: format: unknown field "note"`},
		{"a member the signature does not have", strings.Replace(second, `"keyId":`, `"by":"ops","keyId":`, 1), `BROKEN at receipt 2: format: unknown field "signature.by"`},
		{"a member the receipt does not have", strings.Replace(second, `"seq":`, `"paid":true,"seq":`, 1), `: format: unknown field "receipt.paid"`},
		{"a member written in another case", strings.Replace(second, `"signature":`, `"Signature":`, 1), `BROKEN at receipt 2: format: unknown field "Signature"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.NotEqual(t, second, c.line)
			// A blank line first: the line is not the receipt's position.
			file := filepath.Join(t.TempDir(), "chain.jsonl")
			require.NoError(t, os.WriteFile(file, []byte("\n"+lines[0]+"\n"+c.line+"\n"+lines[2]+"\n"), 0o644))
			code, out := runCLI(t, nil, "receipts", "verify", "-file", file, "-keys", keysFile)
			assert.Equal(t, 1, code, out)
			assert.Contains(t, out, c.says)
			assert.Contains(t, out, "(line 3 of "+file+")")
			assert.NotContains(t, out, "ok:")
		})
	}
}
