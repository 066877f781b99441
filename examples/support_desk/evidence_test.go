package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/chain"
	"github.com/blackboardkernel/bk/internal/inspect"
)

// A run on a file signs its history: bk verify holds it under the desk's
// public key, and a ticket's evidence bundle verifies offline with that
// key alone (package chain, no store), and fails after any one byte of
// it is changed.
func TestEvidenceBundle(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the desk")
	}
	ctx := context.Background()
	dir := t.TempDir()
	db := filepath.Join(dir, "bk.db")
	var out bytes.Buffer
	if err := run(ctx, []string{"--db", db, "--approver", "supervisor"}, func(string) string { return "" }, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	pubFile := db + ".key.pub"
	raw, err := os.ReadFile(pubFile)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := hex.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil || len(pub) != ed25519.PublicKeySize {
		t.Fatalf("public key file: %q, %v", raw, err)
	}
	bk := func(args ...string) (int, string) {
		var o, e bytes.Buffer
		code := inspect.Main(ctx, args, &o, &e)
		return code, o.String() + e.String()
	}
	if code, text := bk("--db", db, "verify", "--key", pubFile); code != 0 {
		t.Fatalf("bk verify: exit %d\n%s", code, text)
	}
	bundle := filepath.Join(dir, "T1.bundle")
	if code, text := bk("--db", db, "--namespace", "support_desk", "export", "--trace", "T1", "--bundle", bundle); code != 0 {
		t.Fatalf("bk export --bundle: exit %d\n%s", code, text)
	}
	data, err := os.ReadFile(bundle)
	if err != nil {
		t.Fatal(err)
	}
	keys := []ed25519.PublicKey{pub}
	b, err := chain.VerifyBundle(data, keys)
	if err != nil {
		t.Fatalf("the bundle does not verify: %v", err)
	}
	if len(b.Traces) < 2 {
		t.Errorf("the bundle holds %d traces, want the ticket's and its policy trace", len(b.Traces))
	}
	// Every byte of the first and last kilobyte, and one in 61 between.
	for i := range data {
		if i >= 1024 && i < len(data)-1024 && i%61 != 0 {
			continue
		}
		changed := bytes.Clone(data)
		changed[i] ^= 0x01
		if _, err := chain.VerifyBundle(changed, keys); err == nil {
			t.Fatalf("byte %d (%q) changed, the bundle still verifies", i, data[i])
		}
	}
	if code, _ := bk("verify", "--bundle", bundle, "--key", pubFile); code != 0 {
		t.Errorf("bk verify --bundle: exit %d", code)
	}
}
