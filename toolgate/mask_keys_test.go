package toolgate

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/store/memstore"
)

// withMaskKeys masks as withMasking does, under a keyring of one key per
// trace instead of one key.
func withMaskKeys(ring Keyring) func(*setup) {
	return func(su *setup) {
		withMasking(su)
		su.cfg.MaskKey, su.cfg.MaskKeys = nil, ring
	}
}

// openKeys opens a key directory in a fresh temporary directory.
func openKeys(t *testing.T) (*Keys, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "keys")
	k, err := OpenKeyDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	return k, dir
}

var maskedRE = regexp.MustCompile(regexp.QuoteMeta(MaskPrefix) + `[A-Za-z0-9_-]+`)

// storedHashes is every masked value the records of trace hold.
func (d *desk) storedHashes(trace string) map[string]bool {
	d.t.Helper()
	out := map[string]bool{}
	for _, r := range d.records() {
		if r.Provenance.TraceID != trace {
			continue
		}
		b, err := json.Marshal(r)
		if err != nil {
			d.t.Fatal(err)
		}
		for _, m := range maskedRE.FindAllString(string(b), -1) {
			out[m] = true
		}
	}
	return out
}

// orderSpace is the value space of the brute force: every order id a
// guesser would try.
func orderSpace() []string {
	out := make([]string, 1000)
	for i := range out {
		out[i] = fmt.Sprintf("ORD-%04d", i)
	}
	return out
}

// bruteForce returns the values of space whose hash under one of keys is
// among hashes.
func bruteForce(keys [][]byte, space []string, hashes map[string]bool) []string {
	var found []string
	for _, key := range keys {
		for _, v := range space {
			if h, _ := hashValue(key, v); hashes[h] {
				found = append(found, v)
			}
		}
	}
	return found
}

// remainingKeys is every key a keyring still keeps: in memory and in any
// file of its directory, read leniently (a tombstone that kept a key
// counts).
func remainingKeys(t *testing.T, k *Keys, dir string) [][]byte {
	t.Helper()
	var out [][]byte
	k.mu.Lock()
	for _, key := range k.keys {
		out = append(out, key)
	}
	k.mu.Unlock()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var f traceFile
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		if f.Key == "" {
			continue
		}
		key, err := base64.StdEncoding.DecodeString(f.Key)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, key)
	}
	return out
}

// An owner erases trace A's masked values: a brute force over the order
// ids with every key the keyring keeps finds none of A's hashes (it finds
// A's order with A's key before the erasure), no record changes, a new
// call in A fails closed writing nothing, and trace B still binds,
// approves and runs, after the key directory is reopened too.
func TestAttackMaskErase(t *testing.T) {
	const orderA, orderB = "ORD-0042", "ORD-0077"
	dir := t.TempDir()
	var ring *Keys
	var path string
	opened := 0
	fileRing := func(su *setup) { // a key directory of its own for each store
		opened++
		path = filepath.Join(dir, fmt.Sprintf("keys-%d", opened))
		var err error
		if ring, err = OpenKeyDir(context.Background(), path); err != nil {
			t.Fatal(err)
		}
		withMaskKeys(ring)(su)
	}
	onStores(t, func(t *testing.T, d *desk) {
		defer ring.Close()
		d.ground("A", orderA)
		wantOutcome(t, "refund in A", d.refund("A", orderA, 100), audit.OutcomeExecuted, CodeEffectSucceeded)
		wait := d.pendingRefund("B", orderB, 700)
		hashesA := d.storedHashes("A")
		if len(hashesA) < 2 {
			t.Fatalf("trace A holds %d masked values, want the order id's and the refund id's", len(hashesA))
		}
		keyA, err := ring.Key(d.ctx, "", "A")
		if err != nil {
			t.Fatal(err)
		}
		if got := bruteForce([][]byte{keyA}, orderSpace(), hashesA); len(got) == 0 || got[0] != orderA {
			t.Fatalf("the brute force with A's key found %v, want %s: it would prove nothing", got, orderA)
		}
		if got := bruteForce([][]byte{keyA}, orderSpace(), d.storedHashes("B")); len(got) != 0 {
			t.Fatalf("A's key opens B's hashes: %v", got)
		}
		before := mustJSON(t, d.records())

		if err := ring.Erase(d.ctx, "", "A"); err != nil {
			t.Fatal(err)
		}
		if after := mustJSON(t, d.records()); after != before {
			t.Error("erasing a trace's key changed the store")
		}
		if got := bruteForce(remainingKeys(t, ring, path), orderSpace(), hashesA); len(got) != 0 {
			t.Errorf("after the erasure the keyring's keys still open trace A: %v", got)
		}
		n := len(d.records())
		_, err = d.g.Call(d.ctx, Call{Tool: "lookup_order", Args: json.RawMessage(`{"order_id":"` + orderA + `"}`), Caller: "support", TraceID: "A"})
		if !errors.Is(err, ErrMaskErased) {
			t.Errorf("a call in the erased trace: %v, want ErrMaskErased", err)
		}
		if _, err := d.g.Mask(d.ctx, "A", orderA); !errors.Is(err, ErrMaskErased) {
			t.Errorf("Mask in the erased trace: %v, want ErrMaskErased", err)
		}
		if got := len(d.records()); got != n {
			t.Errorf("the refused call wrote %d records, want none", got-n)
		}
		if m := len(d.invocations("lookup_order")); m != 2 {
			t.Errorf("lookup effect ran %d times, want 2 (before the erasure)", m)
		}

		// B binds and approves as before.
		d.approve("B", wait.ActionID, "alice", time.Hour)
		given, _ := json.Marshal(map[string]any(wait.Args))
		res, err := d.g.Resume(d.ctx, "B", wait.ActionID, given)
		if err != nil {
			t.Fatal(err)
		}
		wantOutcome(t, "approved refund in B", res, audit.OutcomeExecuted, CodeEffectSucceeded)
		d.ground("B", orderB)
		wantOutcome(t, "other order in B", d.refund("B", "ORD-0078", 100), audit.OutcomeRefused, CodeArgumentNotBound)

		// Durable: a new process opens the directory; B's grounding made
		// before binds its refund after, A stays erased.
		keyB, _ := ring.Key(d.ctx, "", "B")
		if err := ring.Close(); err != nil {
			t.Fatal(err)
		}
		ring2, err := OpenKeyDir(d.ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer ring2.Close()
		if got, err := ring2.Key(d.ctx, "", "B"); err != nil || !hmac.Equal(got, keyB) {
			t.Errorf("B's key after reopening: %v, want the same key", err)
		}
		if _, err := ring2.Key(d.ctx, "", "A"); !errors.Is(err, ErrMaskErased) {
			t.Errorf("A's key after reopening: %v, want ErrMaskErased", err)
		}
		d.g.Close()
		d.g = d.gate(Config{Tools: d.tools, Contracts: d.contracts, MaskKeys: ring2})
		wantOutcome(t, "refund in B after reopening", d.refund("B", orderB, 100), audit.OutcomeExecuted, CodeEffectSucceeded)
		n = len(d.records())
		args, _ := json.Marshal(map[string]any{"order_id": orderA, "amount": 1})
		if _, err := d.g.Call(d.ctx, Call{Tool: "issue_refund", Args: args, Caller: "support", TraceID: "A"}); !errors.Is(err, ErrMaskErased) {
			t.Errorf("a refund in the erased trace after reopening: %v, want ErrMaskErased", err)
		}
		if got := len(d.records()); got != n {
			t.Errorf("the refused refund wrote %d records, want none", got-n)
		}
		if got := bruteForce(remainingKeys(t, ring2, path), orderSpace(), hashesA); len(got) != 0 {
			t.Errorf("after reopening the keyring's keys open trace A: %v", got)
		}
	}, fileRing)
}

// Resume in an erased trace, with the real arguments, runs nothing and
// records nothing.
func TestMaskErasedResume(t *testing.T) {
	ring := NewKeys()
	d := newDesk(t, memstore.New(), withMaskKeys(ring))
	wait := d.pendingRefund("A", secretOrder, 700)
	d.approve("A", wait.ActionID, "alice", time.Hour)
	if err := ring.Erase(d.ctx, "", "A"); err != nil {
		t.Fatal(err)
	}
	n := len(d.records())
	given, _ := json.Marshal(map[string]any(wait.Args))
	if _, err := d.g.Resume(d.ctx, "A", wait.ActionID, given); !errors.Is(err, ErrMaskErased) {
		t.Errorf("Resume in the erased trace: %v, want ErrMaskErased", err)
	}
	if got := len(d.records()); got != n {
		t.Errorf("Resume wrote %d records, want none", got-n)
	}
	if m := len(d.invocations("issue_refund")); m != 0 {
		t.Errorf("the refund ran %d times", m)
	}
}

// Under a keyring every masking path still binds and stores no value: the
// attack of mask_test.go, per trace.
func TestMaskKeysBindPerTrace(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		d.ground("t", secretOrder)
		wantOutcome(t, "other order", d.refund("t", "ORD-OTHER", 100), audit.OutcomeRefused, CodeArgumentNotBound)
		wantOutcome(t, "grounded order", d.refund("t", secretOrder, 100), audit.OutcomeExecuted, CodeEffectSucceeded)
		// The same order observed in another trace hashes otherwise, and
		// a percept masked with t's key does not ground u's refund.
		d.ground("u", secretOrder)
		hu, ht := d.storedHashes("u"), d.storedHashes("t")
		for h := range hu {
			if ht[h] {
				t.Errorf("traces t and u share the hash %s", h)
			}
		}
		mt, _ := d.g.Mask(d.ctx, "t", secretOrder)
		mu, _ := d.g.Mask(d.ctx, "u", secretOrder)
		if mt == mu || !ht[mt] || !hu[mu] {
			t.Errorf("Mask per trace: t %s, u %s", mt, mu)
		}
		wait := d.refund("u", secretOrder, 700)
		wantOutcome(t, "big refund in u", wait, audit.OutcomePendingApproval, CodeApprovalRequired)
		d.approve("u", wait.ActionID, "alice", time.Hour)
		given, _ := json.Marshal(map[string]any(wait.Args))
		res, err := d.g.Resume(d.ctx, "u", wait.ActionID, given)
		if err != nil {
			t.Fatal(err)
		}
		wantOutcome(t, "approved in u", res, audit.OutcomeExecuted, CodeEffectSucceeded)
		d.noSecret(t, secretOrder)
	}, withMaskKeys(NewKeys()))
}

// New refuses both mask options, a nil keyring, and under a keyring a
// once-key over a masked argument or over a masked field of the percept it
// reads; one key for all traces keeps allowing them.
func TestMaskKeysNewRefuses(t *testing.T) {
	ctx := context.Background()
	base := func(mods ...func(*setup)) Config {
		su := setup{tools: deskTools(func(string) EffectFunc {
			return func(context.Context, Invocation) (blackboard.Payload, error) { return nil, nil }
		}), contracts: []Contract{{Name: "support", Tools: []string{"lookup_order", "issue_refund"}}}}
		for _, m := range mods {
			m(&su)
		}
		cfg := su.cfg
		cfg.Kernel.BeliefSpecs = []kernel.BeliefSpec{{Kind: "refund_due", DependsOn: []string{"order"}}}
		cfg.Tools, cfg.Contracts = su.tools, su.contracts
		return cfg
	}
	try := func(what string, want error, cfg Config) {
		t.Helper()
		g, err := New(ctx, cfg)
		if !errors.Is(err, want) || (want == nil) != (err == nil) {
			t.Errorf("%s: %v, want %v", what, err, want)
		}
		if g != nil {
			g.Close()
		}
	}
	both := base(withMaskKeys(NewKeys()))
	both.MaskKey = testMaskKey
	try("both options", ErrInvalidConfig, both)
	try("nil keyring", ErrInvalidConfig, base(withMaskKeys(nil)))
	try("once-key on a masked argument", ErrInvalidTool, base(withMaskKeys(NewKeys()), withOnceKey))
	onPercept := func(su *setup) {
		for i := range su.tools {
			if su.tools[i].Name == "issue_refund" {
				su.tools[i].Once = &kernel.OnceKey{Fields: []string{"order_id"}, Percept: "order"}
			}
		}
	}
	try("once-key on a masked percept field", ErrInvalidTool, base(withMaskKeys(NewKeys()), onPercept))
	try("once-key under one key", nil, base(withMasking, withOnceKey))
	try("keyring without once-keys", nil, base(withMaskKeys(NewKeys())))
}

// shortRing gives a key too short to hash with.
type shortRing struct{}

func (shortRing) Key(context.Context, string, string) ([]byte, error) { return []byte("short"), nil }

// A keyring that gives a short key fails the call closed, writing nothing.
func TestMaskKeysShortKey(t *testing.T) {
	d := newDesk(t, memstore.New(), withMaskKeys(shortRing{}))
	_, err := d.g.Call(d.ctx, Call{Tool: "lookup_order", Args: json.RawMessage(`{"order_id":"` + secretOrder + `"}`), Caller: "support", TraceID: "t"})
	if !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("call under a short key: %v, want ErrInvalidConfig", err)
	}
	if n := len(d.records()); n != 0 {
		t.Errorf("%d records written", n)
	}
}

// dirNames is the names of dir's entries.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// A key directory is 0700, its trace files 0600 and named by a hash of
// the trace id alone; it refuses a directory others may reach and a
// damaged trace file; a write that fails gives no key, erases nothing and
// leaves no file; an erasure leaves no key in any file and holds after
// reopening, and erasing twice or a trace never keyed is no error.
func TestKeyDir(t *testing.T) {
	ctx := context.Background()
	k, dir := openKeys(t)
	if info, err := os.Stat(dir); err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("new key directory: %v %v, want mode 0700", info, err)
	}
	a, err := k.Key(ctx, "", "trace-a")
	if err != nil || len(a) != MinMaskKey {
		t.Fatalf("Key: %d bytes, %v", len(a), err)
	}
	if again, _ := k.Key(ctx, "", "trace-a"); !hmac.Equal(a, again) {
		t.Error("a trace's key changed")
	}
	if b, _ := k.Key(ctx, "", "trace-b"); hmac.Equal(a, b) {
		t.Error("two traces share a key")
	}
	names := dirNames(t, dir)
	if len(names) != 2 {
		t.Fatalf("directory holds %v, want a file per trace", names)
	}
	for _, name := range names {
		if strings.Contains(name, "trace") || !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(name) {
			t.Errorf("trace file name %q: want the hex SHA-256 of the id alone", name)
		}
		if info, _ := os.Stat(filepath.Join(dir, name)); info.Mode().Perm() != 0o600 {
			t.Errorf("trace file %s has mode %#o", name, info.Mode().Perm())
		}
	}
	if _, err := k.Key(ctx, "", ""); !errors.Is(err, ErrInvalidCall) {
		t.Errorf("empty trace: %v, want ErrInvalidCall", err)
	}
	if err := k.Erase(ctx, "", ""); !errors.Is(err, ErrInvalidCall) {
		t.Errorf("erasing an empty trace: %v, want ErrInvalidCall", err)
	}

	// Writes that fail: the link of a first key, the rename of a tombstone.
	failed := errors.New("disk full")
	keyDirLink = func(string, string) error { return failed }
	keyDirRename = func(string, string) error { return failed }
	t.Cleanup(func() { keyDirLink, keyDirRename = os.Link, os.Rename })
	if _, err := k.Key(ctx, "", "trace-c"); !errors.Is(err, failed) {
		t.Errorf("a new key that cannot be kept: %v, want the write's error", err)
	}
	if err := k.Erase(ctx, "", "trace-a"); !errors.Is(err, failed) {
		t.Errorf("an erasure that cannot be written: %v, want the write's error", err)
	}
	keyDirLink, keyDirRename = os.Link, os.Rename
	if again, err := k.Key(ctx, "", "trace-a"); err != nil || !hmac.Equal(a, again) {
		t.Errorf("a failed erasure changed the key: %v", err)
	}
	if got := dirNames(t, dir); !slices.Equal(got, names) {
		t.Errorf("failed writes left %v, want %v", got, names)
	}

	if err := k.Erase(ctx, "", "trace-a"); err != nil {
		t.Fatal(err)
	}
	if err := k.Erase(ctx, "", "trace-a"); err != nil {
		t.Errorf("erasing twice: %v", err)
	}
	if err := k.Erase(ctx, "", "never-keyed"); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Key(ctx, "", "trace-a"); !errors.Is(err, ErrMaskErased) {
		t.Errorf("Key of an erased trace: %v, want ErrMaskErased", err)
	}
	for _, key := range remainingKeys(t, k, dir) {
		if hmac.Equal(key, a) {
			t.Error("the erased key is still in a file of the directory")
		}
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Key(ctx, "", "trace-b"); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("Key after Close: %v, want ErrInvalidConfig", err)
	}
	if err := k.Erase(ctx, "", "trace-b"); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("Erase after Close: %v, want ErrInvalidConfig", err)
	}

	k2, err := OpenKeyDir(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer k2.Close()
	for _, trace := range []string{"trace-a", "never-keyed"} {
		if _, err := k2.Key(ctx, "", trace); !errors.Is(err, ErrMaskErased) {
			t.Errorf("%s after reopening: %v, want ErrMaskErased", trace, err)
		}
	}
	b, err := k2.Key(ctx, "", "trace-b")
	if err != nil {
		t.Fatal(err)
	}

	// Damaged trace files are refused, never replaced by a new key.
	bpath := filepath.Join(dir, mustKeyName(t, "trace-b"))
	for _, body := range []string{`{"version":1,"key":"c2hvcnQ="}`, `{"version":2,"key":"` + base64.StdEncoding.EncodeToString(b) + `"}`, `not json`, ``,
		`{"version":1,"key":"` + base64.StdEncoding.EncodeToString(b) + `","erased":true}`, `{"version":1}`, `{"version":1,"key":"!!"}`,
		`{"version":1,"key":"` + base64.StdEncoding.EncodeToString(b) + `","trace":"trace-b"}`} {
		if err := os.WriteFile(bpath, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := k2.Key(ctx, "", "trace-b"); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("trace file %s: %v, want ErrInvalidConfig", body, err)
		}
		if got, _ := os.ReadFile(bpath); string(got) != body {
			t.Errorf("a damaged trace file was rewritten: %s", got)
		}
	}
	if err := os.WriteFile(bpath, []byte(`{"version":1,"key":"`+base64.StdEncoding.EncodeToString(b)+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(bpath, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := k2.Key(ctx, "", "trace-b"); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("a trace file others may read: %v, want ErrInvalidConfig", err)
	}

	// The directory itself: modes, a file in its place, an empty path.
	if err := os.Chmod(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenKeyDir(ctx, dir); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("a key directory others may reach: %v, want ErrInvalidConfig", err)
	}
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenKeyDir(ctx, notDir); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("a file as the key directory: %v, want ErrInvalidConfig", err)
	}
	if _, err := OpenKeyDir(ctx, ""); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("an empty path: %v, want ErrInvalidConfig", err)
	}
	if _, err := OpenKeyDir(ctx, filepath.Join(t.TempDir(), "no", "parent")); err == nil {
		t.Error("a key directory without its parent was made")
	}
}

// Two Keys on one directory (two processes) racing for one trace's first
// key end with one key that both use; an erasure through one holds in
// the other at its next call, and a racing first key never lands over
// the tombstone (by chance, with goroutines, and by design, with the
// other Keys acting just before the link).
func TestKeyDirShared(t *testing.T) {
	ctx := context.Background()
	k1, dir := openKeys(t)
	k2, err := OpenKeyDir(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer k2.Close()
	for round := range 20 {
		trace := fmt.Sprintf("race-%d", round)
		var wg sync.WaitGroup
		got := make([][]byte, 8)
		for i := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ring := k1
				if i%2 == 1 {
					ring = k2
				}
				key, err := ring.Key(ctx, "", trace)
				if err != nil {
					t.Error(err)
				}
				got[i] = key
			}()
		}
		wg.Wait()
		for _, key := range got[1:] {
			if !hmac.Equal(key, got[0]) {
				t.Fatalf("%s: racing first uses got different keys", trace)
			}
		}
		if again, _ := k1.Key(ctx, "", trace); !hmac.Equal(again, got[0]) {
			t.Fatalf("%s: the kept key is not the one given", trace)
		}
	}

	// The other Keys acts between this one's read and its link: it lands
	// its key first, which both then use, or its tombstone, which stays.
	t.Cleanup(func() { keyDirLink = os.Link })
	var other []byte
	keyDirLink = func(tmp, path string) error {
		keyDirLink = os.Link
		var err error
		if other, err = k2.Key(ctx, "", "late"); err != nil {
			t.Error(err)
		}
		return os.Link(tmp, path)
	}
	if mine, err := k1.Key(ctx, "", "late"); err != nil || !hmac.Equal(mine, other) {
		t.Errorf("a first key lost to another Keys: %v, want the other's key", err)
	}
	keyDirLink = func(tmp, path string) error {
		keyDirLink = os.Link
		if err := k2.Erase(ctx, "", "late-erased"); err != nil {
			t.Error(err)
		}
		return os.Link(tmp, path)
	}
	if _, err := k1.Key(ctx, "", "late-erased"); !errors.Is(err, ErrMaskErased) {
		t.Errorf("a first key racing an erasure: %v, want ErrMaskErased", err)
	}
	if _, err := k2.Key(ctx, "", "late-erased"); !errors.Is(err, ErrMaskErased) {
		t.Errorf("the tombstone after a racing first key: %v, want ErrMaskErased", err)
	}

	if _, err := k2.Key(ctx, "", "shared"); err != nil {
		t.Fatal(err)
	}
	if err := k1.Erase(ctx, "", "shared"); err != nil {
		t.Fatal(err)
	}
	if _, err := k2.Key(ctx, "", "shared"); !errors.Is(err, ErrMaskErased) {
		t.Errorf("the other Keys after the erasure: %v, want ErrMaskErased", err)
	}

	// An erasure racing first uses: once it is done, no Keys has a key.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ring := k1
			if i%2 == 1 {
				ring = k2
			}
			if i == 0 {
				if err := ring.Erase(ctx, "", "contested"); err != nil {
					t.Error(err)
				}
				return
			}
			if _, err := ring.Key(ctx, "", "contested"); err != nil && !errors.Is(err, ErrMaskErased) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for _, ring := range []*Keys{k1, k2} {
		if _, err := ring.Key(ctx, "", "contested"); !errors.Is(err, ErrMaskErased) {
			t.Errorf("after an erasure racing first uses: %v, want ErrMaskErased", err)
		}
	}
	for _, name := range dirNames(t, dir) {
		if strings.HasPrefix(name, ".tmp-") {
			t.Errorf("left behind: %s", name)
		}
	}
}

// Concurrent first uses of one trace get one key, in memory and in a
// directory; the ring serves many traces at once.
func TestKeysConcurrent(t *testing.T) {
	ctx := context.Background()
	dirRing, _ := openKeys(t)
	for name, k := range map[string]*Keys{"memory": NewKeys(), "directory": dirRing} {
		var wg sync.WaitGroup
		got := make([][]byte, 16)
		for i := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				key, err := k.Key(ctx, "", "shared")
				if err != nil {
					t.Error(err)
				}
				got[i] = key
				if _, err := k.Key(ctx, "", fmt.Sprintf("own-%d", i)); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		for _, key := range got[1:] {
			if !hmac.Equal(key, got[0]) {
				t.Fatalf("%s: concurrent first uses got different keys", name)
			}
		}
	}
}

// A trace erased while its call's effect runs: the output cannot be
// masked, so it is not stored; the record says the output was invalid.
func TestMaskErasedDuringEffect(t *testing.T) {
	ring := NewKeys()
	d := newDesk(t, memstore.New(), withMaskKeys(ring))
	d.setEffect("lookup_order", func(ctx context.Context, inv Invocation) (blackboard.Payload, error) {
		if err := ring.Erase(ctx, "", "A"); err != nil {
			return nil, err
		}
		return blackboard.Payload{"order_id": inv.Args["order_id"], "amount": 10}, nil
	})
	res := d.call("A", "support", "refund", "lookup_order", `{"order_id":"`+secretOrder+`"}`)
	wantOutcome(t, "erased during the effect", res, audit.OutcomeFailed, CodeOutputInvalid)
	if n := len(d.invocations("lookup_order")); n != 1 {
		t.Errorf("effect ran %d times", n)
	}
	d.noSecret(t, secretOrder)
}

// TestKeyNamesPerNamespace: a default-namespace trace's key keeps the
// name it had before keys were per namespace (the hex SHA-256 of the bare
// trace id), "" and the default namespace's name are one namespace, and
// no trace id, not one spelled as another namespace's pair, names another
// namespace's key.
func TestKeyNamesPerNamespace(t *testing.T) {
	ctx := context.Background()
	k, dir := openKeys(t)
	legacy := sha256.Sum256([]byte("T1"))
	if name := mustKeyName(t, "T1"); name != hex.EncodeToString(legacy[:]) {
		t.Fatalf("the default namespace's T1 is named %s, want the hash of the bare id", name)
	}
	plain, err := k.Key(ctx, "", "T1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, hex.EncodeToString(legacy[:]))); err != nil {
		t.Errorf("the default namespace's T1 is not in its old file: %v", err)
	}
	if named, err := k.Key(ctx, blackboard.DefaultNamespace, "T1"); err != nil || !hmac.Equal(named, plain) {
		t.Errorf("T1 in %q and in \"\": %v, want one key", blackboard.DefaultNamespace, err)
	}
	billing, err := k.Key(ctx, "billing", "T1")
	if err != nil {
		t.Fatal(err)
	}
	spelled, err := k.Key(ctx, "", `["billing","T1"]`)
	if err != nil {
		t.Fatal(err)
	}
	if hmac.Equal(billing, plain) || hmac.Equal(billing, spelled) {
		t.Error("billing's T1 shares a key with a default-namespace trace")
	}
	if _, err := k.Key(ctx, "bad\nnamespace", "T1"); !errors.Is(err, ErrInvalidCall) {
		t.Errorf("a namespace with a control character: %v, want ErrInvalidCall", err)
	}
	if err := k.Erase(ctx, "billing", "T1"); err != nil {
		t.Fatal(err)
	}
	if again, err := k.Key(ctx, "", "T1"); err != nil || !hmac.Equal(again, plain) {
		t.Errorf("the default namespace's T1 after billing's T1 was erased: %v, want its key", err)
	}
	mem := NewKeys()
	a, _ := mem.Key(ctx, "desk", "T1")
	if err := mem.Erase(ctx, "billing", "T1"); err != nil {
		t.Fatal(err)
	}
	if again, err := mem.Key(ctx, "desk", "T1"); err != nil || !hmac.Equal(again, a) {
		t.Errorf("desk's T1 in memory after billing's T1 was erased: %v, want its key", err)
	}
}
