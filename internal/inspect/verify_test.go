package inspect_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/chain"
	"github.com/blackboardkernel/bk/internal/inspect"
	"github.com/blackboardkernel/bk/internal/ledger"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/store/sqlitestore"
)

// keyFile writes a fresh key's public half as bk verify reads it (hex,
// with a newline) and returns the file and the private key.
func keyFile(t *testing.T, seed byte) (string, ed25519.PrivateKey) {
	t.Helper()
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, ed25519.SeedSize))
	path := filepath.Join(t.TempDir(), "signer.pub")
	if err := os.WriteFile(path, []byte(hex.EncodeToString(priv.Public().(ed25519.PublicKey))+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, priv
}

// bkOn runs the inspector on store s.
func bkOn(t *testing.T, s store.Store, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := inspect.Main(context.Background(), args, &out, &errOut, inspect.WithStore(s))
	return code, out.String(), errOut.String()
}

// TestVerifyAndExport: a store a signing kernel wrote verifies; a
// trace's bundle exported from it verifies offline, and fails with one
// byte changed or under another key.
func TestVerifyAndExport(t *testing.T) {
	pub, priv := keyFile(t, 1)
	other, _ := keyFile(t, 2)
	s := memstore.New()
	runDesk(t, s, priv)

	code, out, errOut := bkOn(t, s, "verify", "--key", pub)
	if code != inspect.ExitOK || !strings.Contains(out, "verify: everything holds") || !strings.Contains(out, "signatures checked") ||
		!strings.Contains(out, "ticket-2") || !strings.Contains(out, "signed") || strings.Contains(out, "BROKEN") {
		t.Fatalf("verify: exit %d\n%s\n%s", code, out, errOut)
	}
	var rep struct {
		OK                bool `json:"ok"`
		SignaturesChecked bool `json:"signatures_checked"`
		Traces            []struct {
			Trace   string       `json:"trace"`
			Covered bool         `json:"covered"`
			Break   *chain.Break `json:"break"`
		} `json:"traces"`
	}
	code, out, _ = bkOn(t, s, "verify", "--key", pub, "--json")
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != inspect.ExitOK || !rep.OK || !rep.SignaturesChecked || len(rep.Traces) < 4 {
		t.Fatalf("verify --json: exit %d, %v\n%s", code, err, out)
	}
	for _, tr := range rep.Traces {
		if !tr.Covered && tr.Trace != ledger.Trace || tr.Break != nil {
			t.Errorf("trace %+v", tr)
		}
	}
	if code, out, _ := bkOn(t, s, "verify"); code != inspect.ExitOK || !strings.Contains(out, "signatures NOT checked") {
		t.Errorf("verify without a key: exit %d\n%s", code, out)
	}
	if code, out, errOut := bkOn(t, s, "verify", "--key", other); code != inspect.ExitError || !strings.Contains(out, "checkpoints BROKEN") || !strings.Contains(errOut, "does not hold") {
		t.Errorf("verify under another key: exit %d\n%s\n%s", code, out, errOut)
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "ticket-2.bundle")
	code, out, errOut = bkOn(t, s, "export", "--trace", "ticket-2", "--bundle", file)
	if code != inspect.ExitOK || !strings.Contains(out, "wrote "+file) {
		t.Fatalf("export --bundle: exit %d\n%s\n%s", code, out, errOut)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	b, err := chain.VerifyBundle(data, []ed25519.PublicKey{priv.Public().(ed25519.PublicKey)})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Traces) != 2 || b.Traces[0].Trace != "ticket-2" || b.Traces[1].Trace != audit.PolicyTrace("desk") {
		t.Errorf("the bundle holds %d traces: %+v", len(b.Traces), b.Traces)
	}

	// Offline: no store, no --db.
	code, out, errOut = bk(t, "verify", "--bundle", file, "--key", pub)
	if code != inspect.ExitOK || !strings.Contains(out, "verifies") || !strings.Contains(out, `trace "ticket-2"`) {
		t.Fatalf("verify --bundle: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, _, errOut := bk(t, "verify", "--bundle", file, "--key", other); code != inspect.ExitError || !strings.Contains(errOut, "does not verify") {
		t.Errorf("verify --bundle under another key: exit %d\n%s", code, errOut)
	}
	flipped := bytes.Clone(data)
	flipped[len(flipped)/2] ^= 0x01
	if err := os.WriteFile(file, flipped, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := bk(t, "verify", "--bundle", file, "--key", pub); code != inspect.ExitError || !strings.Contains(errOut, "does not verify") || out != "" {
		t.Errorf("verify --bundle with one byte changed: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = bk(t, "verify", "--bundle", file, "--key", pub, "--json")
	var brep struct {
		Verified bool   `json:"verified"`
		Error    string `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &brep); err != nil || code != inspect.ExitError || brep.Verified || brep.Error == "" {
		t.Errorf("verify --bundle --json with one byte changed: exit %d, %v\n%s", code, err, out)
	}

	// Usage: --bundle without a key, export --bundle without a trace.
	if code, _, errOut := bk(t, "verify", "--bundle", file); code != inspect.ExitUsage || !strings.Contains(errOut, "--bundle needs --key") {
		t.Errorf("verify --bundle without --key: exit %d\n%s", code, errOut)
	}
	if code, _, errOut := bkOn(t, s, "export", "--bundle", file); code != inspect.ExitUsage || !strings.Contains(errOut, "--bundle needs --trace") {
		t.Errorf("export --bundle without --trace: exit %d\n%s", code, errOut)
	}
	// A key file that is not one.
	bad := filepath.Join(dir, "bad.pub")
	os.WriteFile(bad, []byte("not hex"), 0o644)
	if code, _, errOut := bkOn(t, s, "verify", "--key", bad); code != inspect.ExitError || !strings.Contains(errOut, "64 hex digits") {
		t.Errorf("verify with a bad key file: exit %d\n%s", code, errOut)
	}
}

// TestExportUnsigned: a store no signing kernel wrote has no checkpoint
// to bundle: export fails, clearly, and leaves no file.
func TestExportUnsigned(t *testing.T) {
	s := memstore.New()
	runDesk(t, s, nil)
	file := filepath.Join(t.TempDir(), "out.bundle")
	code, out, errOut := bkOn(t, s, "export", "--trace", "ticket-2", "--bundle", file)
	if code != inspect.ExitError || out != "" || !strings.Contains(errOut, `no signed checkpoint covers trace "ticket-2": run the kernel with a signing key`) {
		t.Errorf("export of an unsigned trace: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("a failed export left %s: %v", file, err)
	}
	if ents, _ := os.ReadDir(filepath.Dir(file)); len(ents) != 0 {
		t.Errorf("a failed export left %v", ents)
	}
	if code, _, errOut := bkOn(t, s, "export", "--trace", "UNKNOWN", "--bundle", file); code != inspect.ExitError || !strings.Contains(errOut, `no trace "UNKNOWN"`) {
		t.Errorf("export of an unknown trace: exit %d\n%s", code, errOut)
	}
	// Without checkpoints, verify checks the chains and says so.
	if code, out, _ := bkOn(t, s, "verify"); code != inspect.ExitOK || !strings.Contains(out, "checkpoints: none") {
		t.Errorf("verify of an unsigned store: exit %d\n%s", code, out)
	}
}

// TestVerifySQLiteTampered: a row edited by SQL in the file breaks its
// trace's chain: bk verify exits 1 and names the fault and the record.
func TestVerifySQLiteTampered(t *testing.T) {
	pub, priv := keyFile(t, 1)
	db := filepath.Join(t.TempDir(), "desk.db")
	s, err := sqlitestore.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := any(s).(store.Chainer); !ok {
		s.Close()
		t.Skip("sqlitestore keeps no hash chain in this build")
	}
	runDesk(t, s, priv)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := bk(t, "--db", db, "verify", "--key", pub); code != inspect.ExitOK {
		t.Fatalf("verify: exit %d\n%s\n%s", code, out, errOut)
	}
	file := filepath.Join(t.TempDir(), "ticket-2.bundle")
	if code, _, errOut := bk(t, "--db", db, "export", "--trace", "ticket-2", "--bundle", file); code != inspect.ExitOK {
		t.Fatalf("export: exit %d\n%s", code, errOut)
	}
	if code, _, errOut := bk(t, "verify", "--bundle", file, "--key", pub); code != inspect.ExitOK {
		t.Fatalf("verify --bundle: exit %d\n%s", code, errOut)
	}

	raw, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	var id string
	if err := raw.QueryRow(`SELECT id FROM records WHERE trace_id = 'ticket-2' ORDER BY seq LIMIT 1`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`UPDATE records SET kind = 'forged' WHERE id = ?`, id); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	code, out, errOut := bk(t, "--db", db, "verify", "--key", pub)
	if code != inspect.ExitError || !strings.Contains(out, "BROKEN: content at event 0, record "+id) || !strings.Contains(errOut, "1 broken trace") {
		t.Errorf("verify of a tampered store: exit %d\n%s\n%s", code, out, errOut)
	}
}
