package kernel_test

import (
	"errors"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/kernel"
)

func TestArgsDigest(t *testing.T) {
	base := kernel.Payload{"amount": 100.0, "order_id": "A1", kernel.KeyRequiresBeliefs: []string{"refund_due"}}
	d1, err := kernel.ArgsDigest(base)
	if err != nil {
		t.Fatal(err)
	}
	// Bookkeeping keys are not arguments; numbers compare by value.
	same := kernel.Payload{"order_id": "A1", "amount": 100, kernel.KeyUsesStaleData: false, kernel.KeyType: "issue_refund"}
	if d2, _ := kernel.ArgsDigest(same); d2 != d1 {
		t.Errorf("digest changed with bookkeeping keys: %s vs %s", d2, d1)
	}
	if d3, _ := kernel.ArgsDigest(with(base, "amount", 999.0)); d3 == d1 {
		t.Error("digest did not change with the amount")
	}
	if _, err := kernel.ArgsDigest(kernel.Payload{"bad": func() {}}); !errors.Is(err, kernel.ErrInvalidPayload) {
		t.Errorf("digest of a func: %v", err)
	}
}

// committedRefund commits a refund in trace t and returns it with its digest.
func (a *arena) committedRefund(amount float64) (kernel.Record, string) {
	a.t.Helper()
	a.groundRefund("t", "A1")
	d := a.refund("t", "amount", amount)
	if !d.Committed() {
		a.t.Fatalf("refund: %s", d.Code)
	}
	digest, err := kernel.ArgsDigest(d.Record.Payload)
	if err != nil {
		a.t.Fatal(err)
	}
	return d.Record, digest
}

func TestApprovals(t *testing.T) {
	attack(t, func(t *testing.T, a *arena) {
		act, digest := a.committedRefund(700)
		alice := a.k.Approver("human:alice")
		rec, err := alice.Approve(a.ctx, "t", act.ID, digest, "ok for 700", time.Hour)
		if err != nil {
			t.Fatalf("Approve: %v", err)
		}
		if rec.Kind != kernel.KindApproval || rec.Provenance.Role != kernel.RoleApprover || rec.Provenance.Writer != "human:alice" ||
			rec.Payload[kernel.KeyDigest] != digest || rec.Payload[kernel.KeyDecision] != kernel.DecisionApproved {
			t.Errorf("approval record %+v", rec)
		}
		var got []kernel.Record
		for r, err := range a.k.Approvals(a.ctx, "t", act.ID) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, r)
		}
		if len(got) != 1 || got[0].ID != rec.ID || got[0].Expired(a.k.Now()) {
			t.Errorf("approvals %v", got)
		}
		a.clock.Advance(2 * time.Hour)
		if !got[0].Expired(a.k.Now()) {
			t.Error("approval not expired after its TTL")
		}
		if _, err := a.k.Approver("human:bob").Deny(a.ctx, "t", act.ID, digest, "no", time.Hour); err != nil {
			t.Errorf("Deny: %v", err)
		}
	})
}

func TestApprovalRefusals(t *testing.T) {
	attack(t, func(t *testing.T, a *arena) {
		act, digest := a.committedRefund(700)
		other, _ := kernel.ArgsDigest(with(act.Payload, "amount", 999.0))
		before := a.refunds()
		for _, tc := range []struct {
			name     string
			approver *kernel.Approver
			action   string
			digest   string
			ttl      time.Duration
			want     error
		}{
			{"no identity", a.k.Approver(""), act.ID, digest, time.Hour, kernel.ErrInvalidInput},
			{"self-approval", a.k.Approver("llm"), act.ID, digest, time.Hour, kernel.ErrPermission},
			{"changed arguments", a.k.Approver("human:alice"), act.ID, other, time.Hour, kernel.ErrInvalidInput},
			{"not a committed action", a.k.Approver("human:alice"), "percepts:t:1", digest, time.Hour, kernel.ErrInvalidReference},
			{"unknown action", a.k.Approver("human:alice"), "actions:t:99", digest, time.Hour, kernel.ErrInvalidReference},
			{"no TTL", a.k.Approver("human:alice"), act.ID, digest, 0, kernel.ErrInvalidInput},
			{"TTL too long", a.k.Approver("human:alice"), act.ID, digest, kernel.MaxApprovalTTL + time.Second, kernel.ErrInvalidInput},
		} {
			if _, err := tc.approver.Approve(a.ctx, "t", tc.action, tc.digest, "", tc.ttl); !errors.Is(err, tc.want) {
				t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
			}
		}
		if _, err := a.k.Approver("human:alice").Write(a.ctx, kernel.Entry{TraceID: "t", Slot: kernel.Evidence, Kind: kernel.KindApproval}); !errors.Is(err, kernel.ErrPermission) {
			t.Errorf("approver Write: %v, want ErrPermission", err)
		}
		for r, err := range a.k.Approvals(a.ctx, "t", act.ID) {
			t.Errorf("refused approvals left a record: %v %v", r.ID, err)
		}
		if a.refunds() != before {
			t.Error("refusals changed the actions")
		}
	})
}

func TestDecisionRecords(t *testing.T) {
	attack(t, func(t *testing.T, a *arena) {
		a.groundRefund("t", "A1")
		call := kernel.Payload{"tool": "issue_refund", "call_id": "call_1"}
		gov := a.k.Governor()
		refused, err := gov.Submit(a.ctx, "llm", kernel.Entry{TraceID: "t", Slot: kernel.Actions, Kind: "issue_refund",
			Payload: action("refund_due", "other_belief"), Audit: &kernel.Audit{Context: call}})
		if err != nil || refused.Committed() {
			t.Fatalf("refused refund: %v %v", refused.Code, err)
		}
		ok, err := gov.Submit(a.ctx, "llm", kernel.Entry{TraceID: "t", Slot: kernel.Actions, Kind: "issue_refund",
			Payload: action("refund_due"), Audit: &kernel.Audit{PendingApproval: true, Context: call}})
		if err != nil || !ok.Committed() {
			t.Fatalf("refund: %v %v", ok.Code, err)
		}
		res, err := gov.Write(a.ctx, "payments", kernel.Entry{TraceID: "t", Slot: kernel.Percepts, Kind: "refund_result",
			Payload: kernel.Payload{"status": "succeeded"}, InputRefs: []string{ok.Record.ID},
			Audit: &kernel.Audit{Outcome: kernel.OutcomeExecuted, Code: "EFFECT_SUCCEEDED", Context: call}, OnceKeys: []string{"result/A1"}})
		if err != nil {
			t.Fatal(err)
		}
		standalone, err := a.k.RecordDecision(a.ctx, kernel.DecisionRecord{TraceID: "t", Kind: "send_email", Outcome: kernel.OutcomeRefused, Code: "TOOL_NOT_PERMITTED"})
		if err != nil {
			t.Fatal(err)
		}
		var all []kernel.DecisionRecord
		for d, err := range a.k.DecisionRecords(a.ctx, kernel.DecisionFilter{}) {
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, d)
		}
		if len(all) != 4 {
			t.Fatalf("%d decision records, want 4: %+v", len(all), all)
		}
		r0, r1, r2, r3 := all[0], all[1], all[2], all[3]
		if r0.Outcome != kernel.OutcomeRefused || r0.Code != refused.Code || r0.ID != refused.ID || r0.Subject != refused.ProposalID ||
			r0.Version != kernel.DecisionRecordVersion || r0.Context["call_id"] != "call_1" || r0.Detail != refused.Detail {
			t.Errorf("refusal record %+v (decision %+v)", r0, refused)
		}
		if r1.Outcome != kernel.OutcomePendingApproval || r1.Subject != ok.Record.ID || len(r1.EvidenceRefs) == 0 {
			t.Errorf("commit record %+v", r1)
		}
		if r2.Outcome != kernel.OutcomeExecuted || r2.Subject != res.Record.ID || r2.Code != "EFFECT_SUCCEEDED" {
			t.Errorf("result record %+v", r2)
		}
		// Submit and Write name the decision records they appended.
		for _, c := range []struct{ what, id, recordID, wantID, wantRecordID string }{
			{"refusal", r0.ID, r0.RecordID, refused.ID, refused.AuditID},
			{"commit", r1.ID, r1.RecordID, ok.ID, ok.AuditID},
			{"result", r2.ID, r2.RecordID, res.DecisionID, res.AuditID},
		} {
			if c.wantRecordID == "" || c.id != c.wantID || c.recordID != c.wantRecordID {
				t.Errorf("%s record %s in %s, but the call returned %q in %q", c.what, c.id, c.recordID, c.wantID, c.wantRecordID)
			}
		}
		if r3.ID != standalone.ID || r3.Kind != "send_email" {
			t.Errorf("standalone record %+v", r3)
		}
		// The records land with what they record: same batch, adjacent ids.
		for _, d := range []kernel.DecisionRecord{r0, r1, r2} {
			if _, err := a.store.Get(a.ctx, d.Subject); err != nil {
				t.Errorf("subject %s of %s: %v", d.Subject, d.RecordID, err)
			}
		}
		n := 0
		for range a.k.DecisionRecords(a.ctx, kernel.DecisionFilter{TraceID: "t", Kind: "issue_refund", Outcome: kernel.OutcomeRefused}) {
			n++
		}
		if n != 1 {
			t.Errorf("filtered %d records, want 1", n)
		}
	})
}

func TestOnceKeysOnWrites(t *testing.T) {
	attack(t, func(t *testing.T, a *arena) {
		w := func(keys ...string) error {
			res, err := a.k.Governor().Write(a.ctx, "payments", kernel.Entry{TraceID: "t", Slot: kernel.Percepts, Kind: "attempt", OnceKeys: keys})
			if err == nil && (res.Record.ID == "" || res.DecisionID != "" || res.AuditID != "") {
				t.Errorf("a write without Audit returned %+v, want its record and no decision record", res)
			}
			return err
		}
		if err := w("effect/A1"); err != nil {
			t.Fatal(err)
		}
		a.mark()
		if err := w("effect/A1"); !errors.Is(err, kernel.ErrDuplicateKey) {
			t.Errorf("second claim: %v, want ErrDuplicateKey", err)
		}
		if err := w("x", "x"); !errors.Is(err, kernel.ErrInvalidInput) {
			t.Errorf("repeated key: %v", err)
		}
		a.unchanged()
		if _, err := a.planner.Write(a.ctx, kernel.Entry{TraceID: "t", Slot: kernel.Beliefs, Kind: "b", Payload: belief(true, "attempt"), OnceKeys: []string{"k"}}); !errors.Is(err, kernel.ErrPermission) {
			t.Errorf("planner claims a key: %v, want ErrPermission", err)
		}
		if _, err := a.planner.Submit(a.ctx, kernel.Entry{TraceID: "t", Slot: kernel.Beliefs, Kind: "b", Payload: belief(true, "attempt"), OnceKeys: []string{"k"}}); !errors.Is(err, kernel.ErrPermission) {
			t.Errorf("planner submit claims a key: %v, want ErrPermission", err)
		}
	})
}

// mark and unchanged snapshot the store, as the fixture's do.
func (a *arena) mark() { a.marked = a.dumpAll() }

func (a *arena) unchanged() {
	a.t.Helper()
	if got := a.dumpAll(); len(got) != len(a.marked) {
		a.t.Errorf("store changed: had %d records, now %d", len(a.marked), len(got))
	}
}

func (a *arena) dumpAll() []kernel.Record {
	var out []kernel.Record
	for _, slot := range kernel.AllSlots() {
		for r, err := range a.store.ListSlot(a.ctx, slot, kernel.Filter{}) {
			if err != nil {
				a.t.Fatal(err)
			}
			out = append(out, r)
		}
	}
	return out
}

func TestSpecAndNamespace(t *testing.T) {
	once := &kernel.OnceKey{Fields: []string{"order_id"}}
	k, err := kernel.New(kernel.WithNamespace("shop"), kernel.WithActionSpecs(kernel.ActionSpec{Type: "issue_refund", MinBeliefs: []string{"refund_due"}, Once: once}))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if k.Namespace() != "shop" {
		t.Errorf("namespace %q", k.Namespace())
	}
	s, ok := k.Spec("issue_refund")
	if !ok || s.Once == nil || s.Once.Fields[0] != "order_id" || s.MinBeliefs[0] != "refund_due" {
		t.Fatalf("spec %+v %v", s, ok)
	}
	s.Once.Fields[0], s.MinBeliefs[0], once.Fields[0] = "x", "y", "z" // copies both ways
	if again, _ := k.Spec("issue_refund"); again.Once.Fields[0] != "order_id" || again.MinBeliefs[0] != "refund_due" {
		t.Errorf("spec changed through a copy: %+v", again)
	}
	if _, ok := k.Spec("nothing"); ok {
		t.Error("unregistered type has a spec")
	}
	if fb, ok := k.Spec(kernel.FallbackQueueForReview); !ok || !fb.SafeFallback {
		t.Error("default fallback missing")
	}
}
