package storetest

import (
	"fmt"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// wantClaim reports unless key is claimed by id in the default namespace.
func wantClaim(t *testing.T, s store.Store, key, id, contract string) {
	t.Helper()
	wantClaimIn(t, s, "", key, id, contract)
}

// wantClaimIn reports unless key is claimed by id in namespace ns.
func wantClaimIn(t *testing.T, s store.Store, ns, key, id, contract string) {
	t.Helper()
	got, err := s.ClaimedBy(t.Context(), ns, key)
	if err != nil || got != id {
		t.Errorf("%s: ClaimedBy(%q) = %q, %v; want %q", contract, key, got, err, id)
	}
}

// wantFree reports unless key is unclaimed in the default namespace.
func wantFree(t *testing.T, s store.Store, key, contract string) {
	t.Helper()
	wantFreeIn(t, s, "", key, contract)
}

// wantFreeIn reports unless key is unclaimed in namespace ns.
func wantFreeIn(t *testing.T, s store.Store, ns, key, contract string) {
	t.Helper()
	got, err := s.ClaimedBy(t.Context(), ns, key)
	if err == nil {
		t.Errorf("%s: ClaimedBy(%q) = %q; want the key free (ErrNotFound)", contract, key, got)
		return
	}
	wantErr(t, err, blackboard.ErrNotFound, contract+": ClaimedBy of a free key")
}

// testClaims checks once-keys: a claim lands with its batch, and a batch
// that claims a key already claimed, or one key twice, is refused with
// ErrDuplicateKey and lands nothing.
func testClaims(t *testing.T, s store.Store) {
	ctx := t.Context()
	const key = "refund:ch_1"
	wantFree(t, s, key, "a key no batch claimed is free")

	c := newCommitScene(t, s, "claims")
	first := c.batch
	first.Claims = []store.Claim{{Key: key, RecordID: c.belief.ID}}
	if err := s.Apply(ctx, first); err != nil {
		t.Fatalf("Apply of a batch with a claim of a free key: %v", err)
	}
	wantClaim(t, s, key, c.belief.ID, "a claim lands with its batch and ClaimedBy names the record")
	wantSame(t, mustGet(t, s, c.belief.ID), c.belief, "a batch with a claim lands its appends")

	// A second batch for the same key, with appends and a status change of
	// its own: none of it may land.
	target := record("claims", blackboard.Percepts, "window", 7)
	mustAppend(t, s, target)
	extra := record("claims", blackboard.Actions, "refund", 8)
	refused := []struct {
		name   string
		claims []store.Claim
		free   []string // keys the refused batch claimed that must stay free
	}{
		{"a key already claimed", []store.Claim{{Key: key, RecordID: extra.ID}}, nil},
		{"a free key and a key already claimed", []store.Claim{{Key: "refund:ch_9", RecordID: extra.ID}, {Key: key, RecordID: extra.ID}}, []string{"refund:ch_9"}},
		{"one key twice", []store.Claim{{Key: "refund:twice", RecordID: extra.ID}, {Key: "refund:twice", RecordID: extra.ID}}, []string{"refund:twice"}},
	}
	for _, r := range refused {
		before := dump(t, s)
		b := store.Batch{
			Appends:       []blackboard.Record{extra},
			Invalidations: []store.Invalidation{{ID: target.ID, Status: blackboard.StatusInvalidated, Reason: reason.DuplicateAction}},
			Claims:        r.claims,
		}
		wantErr(t, s.Apply(ctx, b), blackboard.ErrDuplicateKey, "Apply refuses a batch that claims "+r.name)
		unchanged(t, s, before, "a batch refused for claiming "+r.name+" lands nothing: none of its appends or status changes")
		for _, k := range r.free {
			wantFree(t, s, k, "a batch refused for claiming "+r.name+" takes none of its claims")
		}
		wantClaim(t, s, key, c.belief.ID, "a refused claim leaves the key with its first claimant")
	}

	// Keys are compared exactly.
	for i, k := range []string{"Refund:ch_1", "refund:ch_", "refund:ch_10", "refund:ch_1 "} {
		r := record("claims-exact", blackboard.Actions, "refund", i+1)
		if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{r}, Claims: []store.Claim{{Key: k, RecordID: r.ID}}}); err != nil {
			t.Errorf("a key that differs from a claimed one (%q vs %q) is another key: %v", k, key, err)
			continue
		}
		wantClaim(t, s, k, r.ID, "a claim of another key lands")
	}

	// A claim is for ever: the claimant's status does not free its key.
	mustInvalidate(t, s, c.belief.ID, blackboard.StatusInvalidated, reason.StaleEvidence)
	later := record("claims-later", blackboard.Actions, "refund", 1)
	before := dump(t, s)
	wantErr(t, s.Apply(ctx, store.Batch{Appends: []blackboard.Record{later}, Claims: []store.Claim{{Key: key, RecordID: later.ID}}}),
		blackboard.ErrDuplicateKey, "a claim is for ever: invalidating the claiming record does not free its key")
	unchanged(t, s, before, "a batch refused for a claimed key lands nothing")
}

// testClaimsNamespace checks that each namespace is a key space of its
// own: a key claimed in one namespace is free in another, a claim there
// lands, ClaimedBy answers only for the namespace asked, and an empty
// namespace is the default one.
func testClaimsNamespace(t *testing.T, s store.Store) {
	ctx := t.Context()
	const key = "refund:shared"
	claim := func(ns string, r blackboard.Record, claimNS string) error {
		r.Namespace = ns
		return s.Apply(ctx, store.Batch{Appends: []blackboard.Record{r}, Claims: []store.Claim{{Key: key, RecordID: r.ID, Namespace: claimNS}}})
	}
	a := record("claims-ns-a", blackboard.Actions, "refund", 1)
	if err := claim("acme", a, "acme"); err != nil {
		t.Fatalf("a claim in namespace acme: %v", err)
	}
	wantClaimIn(t, s, "acme", key, a.ID, "a claim lands in its namespace")
	wantFreeIn(t, s, "globex", key, "a key claimed in namespace acme is free in namespace globex")
	wantFree(t, s, key, "a key claimed in namespace acme is free in the default namespace")

	b := record("claims-ns-b", blackboard.Actions, "refund", 1)
	if err := claim("globex", b, "globex"); err != nil {
		t.Errorf("a claim of a key another namespace holds: %v; want it to land in its own namespace", err)
	}
	wantClaimIn(t, s, "globex", key, b.ID, "one key claimed in two namespaces is two claims")
	wantClaimIn(t, s, "acme", key, a.ID, "a claim in another namespace leaves acme's claim as it was")

	before := dump(t, s)
	again := record("claims-ns-a2", blackboard.Actions, "refund", 1)
	wantErr(t, claim("acme", again, "acme"), blackboard.ErrDuplicateKey, "a key is claimed at most once in its namespace")
	unchanged(t, s, before, "a batch refused for a key claimed in its namespace lands nothing")

	d := record("claims-ns-d", blackboard.Actions, "refund", 1)
	if err := claim("", d, ""); err != nil {
		t.Fatalf("a claim in the empty namespace: %v", err)
	}
	wantClaimIn(t, s, blackboard.DefaultNamespace, key, d.ID, "a claim with an empty namespace lands in blackboard.DefaultNamespace")
	before = dump(t, s)
	dd := record("claims-ns-d2", blackboard.Actions, "refund", 1)
	wantErr(t, claim(blackboard.DefaultNamespace, dd, blackboard.DefaultNamespace), blackboard.ErrDuplicateKey,
		"the empty namespace and blackboard.DefaultNamespace are one key space")
	unchanged(t, s, before, "a refused batch lands nothing")

	// One key twice in one batch is refused only within one namespace.
	tw := record("claims-ns-twice", blackboard.Actions, "refund", 1)
	tw.Namespace = "acme"
	if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{tw}, Claims: []store.Claim{
		{Key: "refund:twice-ns", RecordID: tw.ID, Namespace: "acme"}, {Key: "refund:twice-ns", RecordID: tw.ID, Namespace: "globex"}}}); err != nil {
		t.Errorf("one batch claiming one key in two namespaces: %v; want both claims", err)
	}
	wantClaimIn(t, s, "globex", "refund:twice-ns", tw.ID, "a batch claims one key in two namespaces")
}

// testClaimsAtomic checks the other direction of atomicity: a batch refused
// for any reason takes none of its claims, and a malformed claim is
// ErrInvalidInput.
func testClaimsAtomic(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := newCommitScene(t, s, "claims-atomic")
	withClaim := func(b store.Batch, key string) store.Batch {
		b.Claims = []store.Claim{{Key: key, RecordID: c.belief.ID}}
		return b
	}
	dup := c.batch
	dup.Appends = []blackboard.Record{c.evidence, c.percept}
	notActive := c.batch
	notActive.Invalidations = []store.Invalidation{{ID: c.dead.ID, Status: blackboard.StatusInvalidated, Reason: reason.StaleEvidence}}
	stale := c.batch
	stale.Trace, stale.TraceLen = "claims-atomic", 1
	malformed := c.batch
	malformed.Appends = []blackboard.Record{c.evidence, c.belief}
	malformed.Appends[1].Kind = ""
	failing := []struct {
		name  string
		batch store.Batch
		want  error
	}{
		{"an append of a stored id", dup, store.ErrDuplicateID},
		{"an invalidation of a record that is not active", notActive, store.ErrNotActive},
		{"a stale trace-length condition", stale, blackboard.ErrConflict},
		{"a malformed record", malformed, blackboard.ErrInvalidInput},
	}
	before := dump(t, s)
	for i, f := range failing {
		key := fmt.Sprintf("atomic-%d", i)
		wantErr(t, s.Apply(ctx, withClaim(f.batch, key)), f.want, "Apply refuses a batch with a claim and "+f.name)
		wantFree(t, s, key, "a batch with "+f.name+" takes none of its claims")
		unchanged(t, s, before, "a batch with a claim and "+f.name+" changes nothing")
	}

	bad := []struct {
		name  string
		claim store.Claim
	}{
		{"an empty key", store.Claim{Key: "", RecordID: c.belief.ID}},
		{"an empty record id", store.Claim{Key: "bad-claim", RecordID: ""}},
		{"a key that is not valid UTF-8", store.Claim{Key: badUTF8, RecordID: c.belief.ID}},
		{"a record id that is not valid UTF-8", store.Claim{Key: "bad-claim", RecordID: badUTF8}},
	}
	for _, b := range bad {
		if (&store.Batch{Claims: []store.Claim{b.claim}}).Check("", "") == nil {
			t.Fatalf("suite bug: a claim with %s passes store.Batch.Check", b.name)
		}
		batch := c.batch
		batch.Claims = []store.Claim{{Key: "good-claim", RecordID: c.belief.ID}, b.claim}
		wantErr(t, s.Apply(ctx, batch), blackboard.ErrInvalidInput, "Apply refuses a claim with "+b.name)
		unchanged(t, s, before, "a batch with a claim with "+b.name+" changes nothing")
		wantFree(t, s, "good-claim", "a batch with a claim with "+b.name+" takes none of its claims")
	}
	wantFree(t, s, "", "the empty key is never claimed")

	final := withClaim(c.batch, "atomic-ok")
	if err := s.Apply(ctx, final); err != nil {
		t.Fatalf("the batch without the fault: %v", err)
	}
	wantClaim(t, s, "atomic-ok", c.belief.ID, "the batch without the fault takes its claim")
}

// testConcurrentClaims races goroutines, each appending a record of its
// own, for one key: exactly one batch lands.
func testConcurrentClaims(t *testing.T, s store.Store) {
	const n, key = 16, "refund:raced"
	recs := make([]blackboard.Record, n)
	for g := range recs {
		recs[g] = record(fmt.Sprintf("claim-race-%d", g), blackboard.Actions, "issue_refund", 1)
	}
	errs := make([]error, n)
	race(n, func(g int) {
		errs[g] = s.Apply(t.Context(), store.Batch{Appends: []blackboard.Record{recs[g]}, Claims: []store.Claim{{Key: key, RecordID: recs[g].ID}}})
	})
	contract := "many goroutines claiming one key: exactly one wins, the others get ErrDuplicateKey"
	w := outcome(t, errs, blackboard.ErrDuplicateKey, contract)
	wantClaim(t, s, key, recs[w].ID, "the key is claimed by the winner's record")
	wantSame(t, ids(dump(t, s)), []string{recs[w].ID}, "of the racing batches only the winner's record landed")
}
