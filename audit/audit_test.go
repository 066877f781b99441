package audit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// Of decodes only a decision record the kernel's role wrote; the same
// kind and payload under any other role, or another kind, is no decision
// record.
func TestOfAcceptsOnlyTheKernelsRecords(t *testing.T) {
	f, err := audit.Entry{TraceID: "t", Subject: "actions:t:3", Kind: "issue_refund", Outcome: audit.OutcomePendingApproval,
		Code: reason.Committed, Context: blackboard.Payload{"tool": "issue_refund"}}.Follow()
	if err != nil {
		t.Fatal(err)
	}
	if f.Role != blackboard.RoleKernel || f.Entry.Slot != blackboard.Evidence || f.Entry.Kind != audit.Kind || len(f.Entry.InputRefs) != 1 ||
		f.Entry.InputRefs[0] != "actions:t:3" || f.Entry.TraceID != "t" {
		t.Fatalf("follow %+v", f)
	}
	for _, key := range []string{"trace_id", "namespace", "ts_ms", "record_id"} {
		if _, stored := f.Entry.Payload[key]; stored {
			t.Errorf("the payload stores %s, which its record says", key)
		}
	}
	rec := blackboard.Record{ID: "evidence:t:4", Slot: blackboard.Evidence, Mode: blackboard.ModeCommit, Kind: audit.Kind, Payload: f.Entry.Payload,
		Namespace: "shop", Provenance: blackboard.Provenance{Role: blackboard.RoleKernel, Writer: "kernel", TraceID: "t", TimestampMS: 42}}
	d, ok := audit.Of(rec)
	if !ok || d.ID != "decision:evidence:t:4" || d.RecordID != rec.ID || d.TraceID != "t" || d.Namespace != "shop" || d.TimeMS != 42 ||
		d.Version != 1 || d.Outcome != audit.OutcomePendingApproval || d.Context["tool"] != "issue_refund" {
		t.Errorf("decoded %+v %v", d, ok)
	}
	for _, bad := range []func(*blackboard.Record){
		func(r *blackboard.Record) { r.Provenance.Role = blackboard.RoleEvidence },
		func(r *blackboard.Record) { r.Provenance.Role = blackboard.RoleTool },
		func(r *blackboard.Record) { r.Kind = "note" },
		func(r *blackboard.Record) { r.Slot = blackboard.Percepts },
		func(r *blackboard.Record) { r.Payload = blackboard.Payload{"outcome": 7.0} },
	} {
		r := rec
		bad(&r)
		if d, ok := audit.Of(r); ok {
			t.Errorf("decoded %+v from %+v", d, r)
		}
	}
	if _, err := (audit.Entry{TraceID: "t", Kind: "x", Outcome: audit.OutcomeRefused}).Follow(); !errors.Is(err, blackboard.ErrInvalidInput) {
		t.Errorf("a record without a code: %v, want ErrInvalidInput", err)
	}
	if _, err := (audit.Entry{TraceID: "t", Kind: "x", Outcome: audit.OutcomeRefused, Code: "X", Context: blackboard.Payload{"f": func() {}}}).Follow(); !errors.Is(err, blackboard.ErrInvalidPayload) {
		t.Errorf("a context that cannot be stored: %v, want ErrInvalidPayload", err)
	}
}

// ForDecision records what the kernel decided: a commit about the
// committed record with the chain it rests on, a refusal about the
// proposal with the failed record and the causes' records.
func TestForDecision(t *testing.T) {
	commit := kernel.Decision{ID: "decision:actions:t:3", Code: reason.Committed, ProposalID: "actions:t:3",
		CommittedID: "actions:t:4", Constraints: []string{"no_weekend"}}
	committed := blackboard.Record{ID: "actions:t:4", Provenance: blackboard.Provenance{InputRefs: []string{"actions:t:3", "beliefs:t:2"}}, EvidenceRefs: []string{"evidence:t:1"}}
	d := audit.ForDecision("t", "issue_refund", commit, committed)
	if d.Outcome != audit.OutcomeCommitted || d.Subject != "actions:t:4" || d.ID != commit.ID || d.TraceID != "t" || d.Kind != "issue_refund" ||
		len(d.EvidenceRefs) != 3 || d.EvidenceRefs[2] != "evidence:t:1" || len(d.Constraints) != 1 {
		t.Errorf("commit record %+v", d)
	}
	refusal := kernel.Decision{ID: "decision:actions:t:5", Code: reason.NoCommittedBelief, ProposalID: "actions:t:5", Failed: "beliefs:t:2",
		Causes: []kernel.Cause{{Code: reason.StaleEvidence, Record: "percepts:t:1"}, {Code: reason.StaleEvidence, Record: "beliefs:t:2"}}}
	d = audit.ForDecision("t", "issue_refund", refusal, blackboard.Record{})
	if d.Outcome != audit.OutcomeRefused || d.Subject != "actions:t:5" || d.Code != reason.NoCommittedBelief || d.Failed != "beliefs:t:2" ||
		len(d.EvidenceRefs) != 2 || d.EvidenceRefs[0] != "beliefs:t:2" || d.EvidenceRefs[1] != "percepts:t:1" {
		t.Errorf("refusal record %+v", d)
	}
	res := audit.ForRecord(blackboard.Record{ID: "percepts:t:6", Provenance: blackboard.Provenance{TraceID: "t", InputRefs: []string{"actions:t:4"}}},
		"issue_refund", audit.OutcomeExecuted, "EFFECT_SUCCEEDED")
	if res.ID != "decision:percepts:t:6" || res.Subject != "percepts:t:6" || res.TraceID != "t" || res.Outcome != audit.OutcomeExecuted ||
		len(res.EvidenceRefs) != 1 {
		t.Errorf("result record %+v", res)
	}
	if !(audit.Query{TraceID: "t", Kind: "issue_refund", Outcome: audit.OutcomeExecuted}).Match(res) || (audit.Query{Kind: "other"}).Match(res) {
		t.Error("Filter.Match")
	}
}

// An approval round-trips through its encoder and decoder, and only an
// approver's record is an approval.
func TestApproval(t *testing.T) {
	a := audit.Approval{TraceID: "t", ActionID: "actions:t:4", Digest: "sha256:x", Decision: audit.Denied, Approver: "human:bob", Note: "no", TTL: time.Hour}
	f, err := a.Follow()
	if err != nil {
		t.Fatal(err)
	}
	k, err := kernel.New(kernel.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	ctx := context.Background()
	if _, err := k.Handle(blackboard.RoleTool, "t").Write(ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Percepts, Kind: "order"}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Proposer(blackboard.RolePlanner, "llm").Submit(ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Actions, Kind: kernel.FallbackQueueForReview,
		Payload: blackboard.Payload{"requires_beliefs": []string{}}}); err != nil {
		t.Fatal(err)
	}
	f.Entry.InputRefs = []string{"actions:t:3"}
	rec, err := k.Governor().Append(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := audit.ApprovalOf(rec)
	a.ID, a.TimeMS = rec.ID, rec.Provenance.TimestampMS
	if !ok || got != a {
		t.Errorf("decoded %+v, want %+v", got, a)
	}
	rec.Provenance.Role = blackboard.RoleEvidence
	if _, ok := audit.ApprovalOf(rec); ok {
		t.Error("an evidence validator's record decodes as an approval")
	}
	for _, bad := range []audit.Approval{{ActionID: "a", Approver: "x", Decision: audit.Approved}, {TraceID: "t", ActionID: "a", Approver: "x", Decision: "maybe"},
		{TraceID: "t", ActionID: "a", Decision: audit.Approved}} {
		if _, err := bad.Follow(); !errors.Is(err, blackboard.ErrInvalidInput) {
			t.Errorf("%+v: %v, want ErrInvalidInput", bad, err)
		}
	}
}
