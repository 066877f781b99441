package toolgate

import (
	"context"
	"crypto/hmac"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/mask"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store/memstore"
)

// withMaskKeys masks as withMasking does, under a keyring of one key per
// trace instead of one key.
func withMaskKeys(ring mask.Keyring) func(*setup) {
	return func(su *setup) {
		withMasking(su)
		su.cfg.MaskKey, su.cfg.MaskKeys = nil, ring
	}
}

var maskedRE = regexp.MustCompile(regexp.QuoteMeta(mask.Prefix) + `[A-Za-z0-9_-]+`)

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
			if h, _ := mask.Hash(key, v); hashes[h] {
				found = append(found, v)
			}
		}
	}
	return found
}

// remainingKeys is every key a keyring's directory still keeps in any
// of its files, read leniently (a tombstone that kept a key counts).
func remainingKeys(t *testing.T, dir string) [][]byte {
	t.Helper()
	var out [][]byte
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var f struct {
			Key string `json:"key"`
		}
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
	var ring *mask.Keys
	var path string
	opened := 0
	fileRing := func(su *setup) { // a key directory of its own for each store
		opened++
		path = filepath.Join(dir, fmt.Sprintf("keys-%d", opened))
		var err error
		if ring, err = mask.OpenKeyDir(context.Background(), path); err != nil {
			t.Fatal(err)
		}
		withMaskKeys(ring)(su)
	}
	onStores(t, func(t *testing.T, d *desk) {
		defer ring.Close()
		d.ground("A", orderA)
		wantOutcome(t, "refund in A", d.refund("A", orderA, 100), audit.OutcomeExecuted, reason.EffectSucceeded)
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
		if got := bruteForce(remainingKeys(t, path), orderSpace(), hashesA); len(got) != 0 {
			t.Errorf("after the erasure the keyring's keys still open trace A: %v", got)
		}
		n := len(d.records())
		_, err = d.g.Call(d.ctx, Call{Tool: "lookup_order", Args: json.RawMessage(`{"order_id":"` + orderA + `"}`), Caller: "support", TraceID: "A"})
		if !errors.Is(err, mask.ErrErased) {
			t.Errorf("a call in the erased trace: %v, want mask.ErrErased", err)
		}
		if _, err := ring.Key(d.ctx, "", "A"); !errors.Is(err, mask.ErrErased) {
			t.Errorf("an observer's key of the erased trace: %v, want mask.ErrErased", err)
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
		wantOutcome(t, "approved refund in B", res, audit.OutcomeExecuted, reason.EffectSucceeded)
		d.ground("B", orderB)
		wantOutcome(t, "other order in B", d.refund("B", "ORD-0078", 100), audit.OutcomeRefused, reason.ArgumentNotBound)

		// Durable: a new process opens the directory; B's grounding made
		// before binds its refund after, A stays erased.
		keyB, _ := ring.Key(d.ctx, "", "B")
		if err := ring.Close(); err != nil {
			t.Fatal(err)
		}
		ring2, err := mask.OpenKeyDir(d.ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer ring2.Close()
		if got, err := ring2.Key(d.ctx, "", "B"); err != nil || !hmac.Equal(got, keyB) {
			t.Errorf("B's key after reopening: %v, want the same key", err)
		}
		if _, err := ring2.Key(d.ctx, "", "A"); !errors.Is(err, mask.ErrErased) {
			t.Errorf("A's key after reopening: %v, want mask.ErrErased", err)
		}
		d.g.Close()
		d.g = d.gate(Config{Tools: d.tools, Contracts: d.contracts, MaskKeys: ring2})
		wantOutcome(t, "refund in B after reopening", d.refund("B", orderB, 100), audit.OutcomeExecuted, reason.EffectSucceeded)
		n = len(d.records())
		args, _ := json.Marshal(map[string]any{"order_id": orderA, "amount": 1})
		if _, err := d.g.Call(d.ctx, Call{Tool: "issue_refund", Args: args, Caller: "support", TraceID: "A"}); !errors.Is(err, mask.ErrErased) {
			t.Errorf("a refund in the erased trace after reopening: %v, want mask.ErrErased", err)
		}
		if got := len(d.records()); got != n {
			t.Errorf("the refused refund wrote %d records, want none", got-n)
		}
		if got := bruteForce(remainingKeys(t, path), orderSpace(), hashesA); len(got) != 0 {
			t.Errorf("after reopening the keyring's keys open trace A: %v", got)
		}
	}, fileRing)
}

// Resume in an erased trace, with the real arguments, runs nothing and
// records nothing.
func TestMaskErasedResume(t *testing.T) {
	ring := mask.NewKeys()
	d := newDesk(t, memstore.New(), withMaskKeys(ring))
	wait := d.pendingRefund("A", secretOrder, 700)
	d.approve("A", wait.ActionID, "alice", time.Hour)
	if err := ring.Erase(d.ctx, "", "A"); err != nil {
		t.Fatal(err)
	}
	n := len(d.records())
	given, _ := json.Marshal(map[string]any(wait.Args))
	if _, err := d.g.Resume(d.ctx, "A", wait.ActionID, given); !errors.Is(err, mask.ErrErased) {
		t.Errorf("Resume in the erased trace: %v, want mask.ErrErased", err)
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
	ring := mask.NewKeys() // one ring across the stores: each store's traces are new ones
	onStores(t, func(t *testing.T, d *desk) {
		d.ground("t", secretOrder)
		wantOutcome(t, "other order", d.refund("t", "ORD-OTHER", 100), audit.OutcomeRefused, reason.ArgumentNotBound)
		wantOutcome(t, "grounded order", d.refund("t", secretOrder, 100), audit.OutcomeExecuted, reason.EffectSucceeded)
		// The same order observed in another trace hashes otherwise, and
		// a percept masked with t's key does not ground u's refund.
		d.ground("u", secretOrder)
		hu, ht := d.storedHashes("u"), d.storedHashes("t")
		for h := range hu {
			if ht[h] {
				t.Errorf("traces t and u share the hash %s", h)
			}
		}
		// An observer masks with the trace's key, as the gate does.
		observed := func(trace string) string {
			k, err := ring.Key(d.ctx, "", trace)
			if err != nil {
				t.Fatal(err)
			}
			m, err := mask.Hash(k, secretOrder)
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		mt, mu := observed("t"), observed("u")
		if mt == mu || !ht[mt] || !hu[mu] {
			t.Errorf("masks per trace: t %s, u %s", mt, mu)
		}
		wait := d.refund("u", secretOrder, 700)
		wantOutcome(t, "big refund in u", wait, audit.OutcomePendingApproval, reason.ApprovalRequired)
		d.approve("u", wait.ActionID, "alice", time.Hour)
		given, _ := json.Marshal(map[string]any(wait.Args))
		res, err := d.g.Resume(d.ctx, "u", wait.ActionID, given)
		if err != nil {
			t.Fatal(err)
		}
		wantOutcome(t, "approved in u", res, audit.OutcomeExecuted, reason.EffectSucceeded)
		d.noSecret(t, secretOrder)
	}, withMaskKeys(ring))
}

// New refuses both mask options, a nil keyring, and under a keyring a
// once-key over a masked argument or over a masked field of the percept it
// reads; one key for all traces keeps allowing them.
func TestMaskKeysNewRefuses(t *testing.T) {
	ctx := context.Background()
	base := func(mods ...func(*setup)) Config {
		su := setup{tools: deskTools(func(string) EffectFunc {
			return func(context.Context, Invocation) (blackboard.Payload, error) { return nil, nil }
		}), contracts: map[string][]string{"support": {"lookup_order", "issue_refund"}}}
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
	both := base(withMaskKeys(mask.NewKeys()))
	both.MaskKey = testMaskKey
	try("both options", blackboard.ErrInvalidInput, both)
	try("nil keyring", blackboard.ErrInvalidInput, base(withMaskKeys(nil)))
	try("once-key on a masked argument", blackboard.ErrInvalidInput, base(withMaskKeys(mask.NewKeys()), withOnceKey))
	onPercept := func(su *setup) {
		for i := range su.tools {
			if su.tools[i].Name == "issue_refund" {
				su.tools[i].Once = &kernel.OnceKey{Fields: []string{"order_id"}, Percept: "order"}
			}
		}
	}
	try("once-key on a masked percept field", blackboard.ErrInvalidInput, base(withMaskKeys(mask.NewKeys()), onPercept))
	try("once-key under one key", nil, base(withMasking, withOnceKey))
	try("keyring without once-keys", nil, base(withMaskKeys(mask.NewKeys())))
}

// shortRing gives a key too short to hash with.
type shortRing struct{}

func (shortRing) Key(context.Context, string, string) ([]byte, error) { return []byte("short"), nil }

// A keyring that gives a short key fails the call closed, writing nothing.
func TestMaskKeysShortKey(t *testing.T) {
	d := newDesk(t, memstore.New(), withMaskKeys(shortRing{}))
	_, err := d.g.Call(d.ctx, Call{Tool: "lookup_order", Args: json.RawMessage(`{"order_id":"` + secretOrder + `"}`), Caller: "support", TraceID: "t"})
	if !errors.Is(err, blackboard.ErrInvalidInput) {
		t.Errorf("call under a short key: %v, want blackboard.ErrInvalidInput", err)
	}
	if n := len(d.records()); n != 0 {
		t.Errorf("%d records written", n)
	}
}

// A trace erased while its call's effect runs: the output cannot be
// masked, so it is not stored; the record says the output was invalid.
func TestMaskErasedDuringEffect(t *testing.T) {
	ring := mask.NewKeys()
	d := newDesk(t, memstore.New(), withMaskKeys(ring))
	d.setEffect("lookup_order", func(ctx context.Context, inv Invocation) (blackboard.Payload, error) {
		if err := ring.Erase(ctx, "", "A"); err != nil {
			return nil, err
		}
		return blackboard.Payload{"order_id": inv.Args["order_id"], "amount": 10}, nil
	})
	res := d.call("A", "support", "refund", "lookup_order", `{"order_id":"`+secretOrder+`"}`)
	wantOutcome(t, "erased during the effect", res, audit.OutcomeFailed, reason.OutputInvalid)
	if n := len(d.invocations("lookup_order")); n != 1 {
		t.Errorf("effect ran %d times", n)
	}
	d.noSecret(t, secretOrder)
}
