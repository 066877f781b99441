package kernel_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
)

// decisionRecord is a Submit's then that appends the decision record of a
// proposal of kind in trace, completed by edit.
func decisionRecord(trace, kind string, edit func(*audit.Entry)) func(kernel.Decision, blackboard.Record) ([]kernel.Follow, error) {
	return func(d kernel.Decision, committed blackboard.Record) ([]kernel.Follow, error) {
		r := audit.ForDecision(trace, kind, d, committed)
		if edit != nil {
			edit(&r)
		}
		f, err := r.Follow()
		return []kernel.Follow{f}, err
	}
}

// writeRecord is a Write's then that appends the decision record of the write.
func writeRecord(kind string, o audit.Outcome, code reason.Code, edit func(*audit.Entry)) func(blackboard.Record) ([]kernel.Follow, error) {
	return func(rec blackboard.Record) ([]kernel.Follow, error) {
		r := audit.ForRecord(rec, kind, o, code)
		if edit != nil {
			edit(&r)
		}
		f, err := r.Follow()
		return []kernel.Follow{f}, err
	}
}

func records(t *testing.T, a *arena, f audit.Query) []audit.Entry {
	t.Helper()
	var out []audit.Entry
	for d, err := range audit.List(a.ctx, a.k.Reader(), f) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// Decision records travel as follow records: a Submit's lands in the
// decision's batch, a Write's in the write's, and both calls name what
// they appended; Append writes one on its own. audit.List reads them
// back, by trace, kind and outcome.
func TestDecisionRecords(t *testing.T) {
	attack(t, func(t *testing.T, a *arena) {
		a.groundRefund("t", "A1")
		call := blackboard.Payload{"tool": "issue_refund", "call_id": "call_1"}
		withCall := func(r *audit.Entry) { r.Context = call }
		gov := a.k.Governor()
		refused, err := gov.Submit(a.ctx, "llm", kernel.Entry{TraceID: "t", Slot: blackboard.Actions, Kind: "issue_refund",
			Payload: action("refund_due", "other_belief")}, decisionRecord("t", "issue_refund", withCall))
		if err != nil || refused.Committed() {
			t.Fatalf("refused refund: %v %v", refused.Code, err)
		}
		ok, err := gov.Submit(a.ctx, "llm", kernel.Entry{TraceID: "t", Slot: blackboard.Actions, Kind: "issue_refund",
			Payload: action("refund_due")}, decisionRecord("t", "issue_refund", func(r *audit.Entry) {
			r.Outcome, r.Context = audit.OutcomePendingApproval, call
		}))
		if err != nil || !ok.Committed() {
			t.Fatalf("refund: %v %v", ok.Code, err)
		}
		res, err := writeResult(gov.Write(a.ctx, "payments", kernel.Entry{TraceID: "t", Slot: blackboard.Percepts, Kind: "refund_result",
			Payload: blackboard.Payload{"status": "succeeded"}, InputRefs: []string{ok.CommittedID}, OnceKeys: []string{"result/A1"}},
			writeRecord("issue_refund", audit.OutcomeExecuted, "EFFECT_SUCCEEDED", withCall)))
		if err != nil {
			t.Fatal(err)
		}
		standalone, err := audit.Append(a.ctx, gov, audit.Entry{TraceID: "t", Kind: "send_email", Outcome: audit.OutcomeRefused, Code: "TOOL_NOT_PERMITTED"})
		if err != nil {
			t.Fatal(err)
		}
		all := records(t, a, audit.Query{})
		if len(all) != 4 {
			t.Fatalf("%d decision records, want 4: %+v", len(all), all)
		}
		r0, r1, r2, r3 := all[0], all[1], all[2], all[3]
		if r0.Outcome != audit.OutcomeRefused || r0.Code != refused.Code || r0.ID != refused.ID || r0.Subject != refused.ProposalID ||
			r0.Version != 1 || r0.Context["call_id"] != "call_1" || r0.Detail != refused.Detail || r0.TraceID != "t" ||
			r0.Namespace != a.k.Namespace() || r0.TimeMS == 0 {
			t.Errorf("refusal record %+v (decision %+v)", r0, refused)
		}
		if r1.Outcome != audit.OutcomePendingApproval || r1.Subject != ok.CommittedID || len(r1.EvidenceRefs) == 0 {
			t.Errorf("commit record %+v", r1)
		}
		if r2.Outcome != audit.OutcomeExecuted || r2.Subject != res.ID || r2.Code != "EFFECT_SUCCEEDED" || r2.Kind != "issue_refund" {
			t.Errorf("result record %+v", r2)
		}
		// Submit and Write name the records they appended.
		for _, c := range []struct {
			what, recordID string
			appended       []string
		}{{"refusal", r0.RecordID, refused.Appended}, {"commit", r1.RecordID, ok.Appended}, {"result", r2.RecordID, res.Appended}} {
			if len(c.appended) != 1 || c.appended[0] != c.recordID {
				t.Errorf("%s record in %s, but the call returned %q", c.what, c.recordID, c.appended)
			}
		}
		if r3.ID != standalone.ID || r3.RecordID != standalone.RecordID || r3.Kind != "send_email" || r3.ID != "decision:"+r3.RecordID {
			t.Errorf("standalone record %+v, Append returned %+v", r3, standalone)
		}
		for _, d := range []audit.Entry{r0, r1, r2} {
			if _, err := a.store.Get(a.ctx, d.Subject); err != nil {
				t.Errorf("subject %s of %s: %v", d.Subject, d.RecordID, err)
			}
		}
		if got := records(t, a, audit.Query{TraceID: "t", Kind: "issue_refund", Outcome: audit.OutcomeRefused}); len(got) != 1 {
			t.Errorf("filtered %d records, want 1", len(got))
		}
		if got := records(t, a, audit.Query{Kind: "issue_refund"}); len(got) != 3 {
			t.Errorf("%d records of kind issue_refund, want the call's chain of 3", len(got))
		}
	}, kernel.Config{ActionSpecs: []kernel.ActionSpec{{Type: "issue_refund", MinBeliefs: []string{"refund_due"}}}})
}

// audit.About finds the decision record that follows its subject, by id:
// for a committed action, a refused proposal, a committed belief (whose
// evidence artifact lands between the two) and an effect's result. A
// record without such a decision record (even one a standalone decision
// record is about), a decision record, an id that names no record and
// another namespace's record find nothing.
func TestDecisionAbout(t *testing.T) {
	attack(t, func(t *testing.T, a *arena) {
		gov := a.k.Governor()
		tool := func(r *audit.Entry) { r.Context = blackboard.Payload{"tool": "issue_refund"} }
		charge := a.percept("t", "charge", blackboard.Payload{"order_id": "A1", "amount": 100.0}, nil, 0)
		belief, err := gov.Submit(a.ctx, "llm", kernel.Entry{TraceID: "t", Slot: blackboard.Beliefs, Kind: "refund_due",
			Payload: belief(true, "charge")}, decisionRecord("t", "refund_due", tool))
		if err != nil || !belief.Committed() || belief.EvidenceID == "" {
			t.Fatalf("belief: %+v %v", belief, err)
		}
		refused, err := gov.Submit(a.ctx, "llm", kernel.Entry{TraceID: "t", Slot: blackboard.Actions, Kind: "issue_refund",
			Payload: action("refund_due", "other_belief")}, decisionRecord("t", "issue_refund", tool))
		if err != nil || refused.Committed() {
			t.Fatalf("refused refund: %+v %v", refused, err)
		}
		act, err := gov.Submit(a.ctx, "llm", kernel.Entry{TraceID: "t", Slot: blackboard.Actions, Kind: "issue_refund",
			Payload: action("refund_due")}, decisionRecord("t", "issue_refund", func(r *audit.Entry) { r.Outcome = audit.OutcomePendingApproval }))
		if err != nil || !act.Committed() {
			t.Fatalf("refund: %+v %v", act, err)
		}
		res, err := writeResult(gov.Write(a.ctx, "payments", kernel.Entry{TraceID: "t", Slot: blackboard.Percepts, Kind: "refund_result",
			InputRefs: []string{act.CommittedID}}, writeRecord("issue_refund", audit.OutcomeExecuted, "EFFECT_SUCCEEDED", nil)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := audit.Append(a.ctx, gov, audit.Entry{TraceID: "t", Kind: "charge", Subject: charge.ID,
			Outcome: audit.OutcomeRefused, Code: "TOOL_NOT_PERMITTED"}); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			what, subject, id string
			appended          []string
			outcome           audit.Outcome
		}{
			{"belief", belief.CommittedID, belief.ID, belief.Appended, audit.OutcomeCommitted},
			{"refusal", refused.ProposalID, refused.ID, refused.Appended, audit.OutcomeRefused},
			{"action", act.CommittedID, act.ID, act.Appended, audit.OutcomePendingApproval},
			{"result", res.ID, "decision:" + res.ID, res.Appended, audit.OutcomeExecuted},
		} {
			d, err := audit.About(a.ctx, a.k.Reader(), c.subject)
			if err != nil || d.ID != c.id || len(c.appended) != 1 || d.RecordID != c.appended[0] || d.Subject != c.subject || d.Outcome != c.outcome {
				t.Errorf("%s: About(%s) = %+v, %v; want %s in %v, %s", c.what, c.subject, d, err, c.id, c.appended, c.outcome)
			}
		}
		other, err := kernel.New(kernel.Config{Store: a.store, Namespace: "other"})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			what, subject string
			k             *kernel.Kernel
		}{
			{"a percept written without a decision record, which a standalone decision record is about", charge.ID, a.k},
			{"the proposal of a committed action", act.ProposalID, a.k},
			{"a decision record", res.Appended[0], a.k},
			{"an id of no record", "actions:t:999", a.k},
			{"a string that is no record id", "t:7", a.k},
			{"a position that is not a number", "actions:t:x", a.k},
			{"another namespace's record", act.CommittedID, other},
		} {
			if d, err := audit.About(a.ctx, c.k.Reader(), c.subject); !errors.Is(err, blackboard.ErrNotFound) {
				t.Errorf("%s: About(%s) = %+v, %v; want ErrNotFound", c.what, c.subject, d, err)
			}
		}
	}, kernel.Config{ActionSpecs: []kernel.ActionSpec{{Type: "issue_refund", MinBeliefs: []string{"refund_due"}}}})
}

// Follow records take the next ids after what they follow, in the same
// batch, with the role they name; they are checked as any entry is, and a
// refused follow, or an error from then, writes nothing at all.
func TestFollowRecords(t *testing.T) {
	attack(t, func(t *testing.T, a *arena) {
		gov := a.k.Governor()
		note := func(role blackboard.Role, writer string, e kernel.Entry) kernel.Follow {
			return kernel.Follow{Role: role, Writer: writer, Entry: e}
		}
		ev := kernel.Entry{Slot: blackboard.Evidence, Kind: "note", Payload: blackboard.Payload{"n": 1.0}}
		w, err := writeResult(gov.Write(a.ctx, "payments", kernel.Entry{TraceID: "t", Slot: blackboard.Percepts, Kind: "refund_result"},
			func(rec blackboard.Record) ([]kernel.Follow, error) {
				if rec.ID == "" {
					t.Error("then got a record without its id")
				}
				k := ev
				k.InputRefs = []string{rec.ID} // a record of the same batch
				p := kernel.Entry{TraceID: "t", Slot: blackboard.Percepts, Kind: "receipt", OnceKeys: []string{"receipt/1"}}
				return []kernel.Follow{note(blackboard.RoleKernel, "ignored", k), note(blackboard.RoleTool, "payments", p),
					note(blackboard.RoleApprover, "human:alice", ev)}, nil
			}))
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"evidence:t:2", "percepts:t:3", "evidence:t:4"}; w.ID != "percepts:t:1" || !slices.Equal(w.Appended, want) {
			t.Fatalf("wrote %s and %v, want percepts:t:1 and %v", w.ID, w.Appended, want)
		}
		for i, want := range []struct {
			role   blackboard.Role
			writer string
		}{{blackboard.RoleKernel, "kernel"}, {blackboard.RoleTool, "payments"}, {blackboard.RoleApprover, "human:alice"}} {
			r, err := a.store.Get(a.ctx, w.Appended[i])
			if err != nil || r.Provenance.Role != want.role || r.Provenance.Writer != want.writer || r.Provenance.TimestampMS != a.get(w.ID).Provenance.TimestampMS {
				t.Errorf("follow %d: %+v %v, want role %s writer %s", i, r.Provenance, err, want.role, want.writer)
			}
		}
		if holder, err := a.k.Governor().ClaimedBy(a.ctx, "receipt/1"); err != nil || holder != w.Appended[1] {
			t.Errorf("follow's once-key held by %q (%v), want %s", holder, err, w.Appended[1])
		}
		fail := errors.New("then fails")
		a.mark()
		for _, c := range []struct {
			what string
			then func(blackboard.Record) ([]kernel.Follow, error)
			want error
		}{
			{"then's error", func(blackboard.Record) ([]kernel.Follow, error) { return nil, fail }, fail},
			{"another trace", func(blackboard.Record) ([]kernel.Follow, error) {
				e := ev
				e.TraceID = "u"
				return []kernel.Follow{note(blackboard.RoleKernel, "", e)}, nil
			}, blackboard.ErrInvalidInput},
			{"a kernel percept", func(blackboard.Record) ([]kernel.Follow, error) {
				return []kernel.Follow{note(blackboard.RoleKernel, "", kernel.Entry{Slot: blackboard.Percepts, Kind: "p"})}, nil
			}, blackboard.ErrPermission},
			{"a planner's follow", func(blackboard.Record) ([]kernel.Follow, error) {
				return []kernel.Follow{note(blackboard.RolePlanner, "llm", kernel.Entry{Slot: blackboard.Beliefs, Kind: "b", Payload: belief(true, "x")})}, nil
			}, blackboard.ErrPermission},
			{"an approver's percept", func(blackboard.Record) ([]kernel.Follow, error) {
				return []kernel.Follow{note(blackboard.RoleApprover, "human:alice", kernel.Entry{Slot: blackboard.Percepts, Kind: "p"})}, nil
			}, blackboard.ErrPermission},
			{"a tool follow without a writer", func(blackboard.Record) ([]kernel.Follow, error) {
				return []kernel.Follow{note(blackboard.RoleTool, "", kernel.Entry{Slot: blackboard.Percepts, Kind: "p"})}, nil
			}, blackboard.ErrInvalidInput},
			{"a reference to no record", func(blackboard.Record) ([]kernel.Follow, error) {
				e := ev
				e.InputRefs = []string{"percepts:t:99"}
				return []kernel.Follow{note(blackboard.RoleKernel, "", e)}, nil
			}, kernel.ErrInvalidReference},
			{"a claimed key", func(blackboard.Record) ([]kernel.Follow, error) {
				return []kernel.Follow{note(blackboard.RoleTool, "payments", kernel.Entry{Slot: blackboard.Percepts, Kind: "p", OnceKeys: []string{"receipt/1"}})}, nil
			}, blackboard.ErrDuplicateKey},
			{"a bad payload", func(blackboard.Record) ([]kernel.Follow, error) {
				return []kernel.Follow{note(blackboard.RoleKernel, "", kernel.Entry{Slot: blackboard.Evidence, Kind: "n", Payload: blackboard.Payload{"f": func() {}}})}, nil
			}, blackboard.ErrInvalidPayload},
		} {
			if _, err := writeResult(gov.Write(a.ctx, "payments", kernel.Entry{TraceID: "t", Slot: blackboard.Percepts, Kind: "refund_result"}, c.then)); !errors.Is(err, c.want) {
				t.Errorf("%s: %v, want %v", c.what, err, c.want)
			}
		}
		// A decision's follow records claim no keys.
		_, err = gov.Submit(a.ctx, "llm", kernel.Entry{TraceID: "t", Slot: blackboard.Actions, Kind: kernel.FallbackQueueForReview,
			Payload: action()}, func(kernel.Decision, blackboard.Record) ([]kernel.Follow, error) {
			return []kernel.Follow{note(blackboard.RoleTool, "payments", kernel.Entry{Slot: blackboard.Percepts, Kind: "p", OnceKeys: []string{"k"}})}, nil
		})
		if !errors.Is(err, blackboard.ErrPermission) {
			t.Errorf("submit follow with a once-key: %v, want ErrPermission", err)
		}
		if _, err := gov.Submit(a.ctx, "llm", kernel.Entry{TraceID: "t", Slot: blackboard.Actions, Kind: kernel.FallbackQueueForReview,
			Payload: action()}, func(kernel.Decision, blackboard.Record) ([]kernel.Follow, error) { return nil, fail }); !errors.Is(err, fail) {
			t.Errorf("submit whose then fails: %v", err)
		}
		if _, err := gov.Append(a.ctx, note(blackboard.RoleKernel, "", ev)); !errors.Is(err, blackboard.ErrInvalidInput) {
			t.Errorf("Append without a trace: %v, want ErrInvalidInput", err)
		}
		a.unchanged()
		rec, err := gov.Append(a.ctx, kernel.Follow{Role: blackboard.RoleKernel, Entry: kernel.Entry{TraceID: "t", Slot: blackboard.Evidence, Kind: "note"}})
		if err != nil || rec.ID != "evidence:t:5" || rec.Provenance.Role != blackboard.RoleKernel {
			t.Errorf("Append: %+v %v", rec, err)
		}
	})
}

// A decision about a plan or an action names the constraints in force, and
// a then function sees the decision before it is written.
func TestDecisionConstraints(t *testing.T) {
	attack(t, func(t *testing.T, a *arena) {
		if _, err := a.sym.CommitConstraint(a.ctx, "t", kernel.Constraint{Name: "no_weekend", Enabled: true, BlocksField: "weekend"}, ""); err != nil {
			t.Fatal(err)
		}
		var seen kernel.Decision
		d, err := a.k.Governor().Submit(a.ctx, "llm", kernel.Entry{TraceID: "t", Slot: blackboard.Actions, Kind: kernel.FallbackQueueForReview,
			Payload: action()}, func(d kernel.Decision, committed blackboard.Record) ([]kernel.Follow, error) {
			seen = d
			return nil, nil
		})
		if err != nil || !d.Committed() {
			t.Fatalf("fallback: %+v %v", d, err)
		}
		if !slices.Equal(d.Constraints, []string{"no_weekend"}) || seen.CommittedID != d.CommittedID || d.Appended != nil {
			t.Errorf("decision %+v (then saw %+v), want the constraint no_weekend and nothing appended", d, seen)
		}
		b, err := a.k.Governor().Submit(a.ctx, "llm", kernel.Entry{TraceID: "t", Slot: blackboard.Beliefs, Kind: "b", Payload: belief(true, "x")},
			func(kernel.Decision, blackboard.Record) ([]kernel.Follow, error) { return nil, nil })
		if err != nil || b.Constraints != nil {
			t.Errorf("a belief's decision names constraints: %+v %v", b, err)
		}
	})
}

// Kernel.Reader reads the namespace and can write nothing.
func TestReader(t *testing.T) {
	attack(t, func(t *testing.T, a *arena) {
		p := a.percept("t", "charge", blackboard.Payload{"amount": 1.0}, nil, 0)
		rd := a.k.Reader()
		if _, isHandle := rd.(kernel.Handle); isHandle {
			t.Error("the reader is a handle that writes")
		}
		if got, err := rd.Get(a.ctx, p.ID); err != nil || got.ID != p.ID {
			t.Errorf("Get: %+v %v", got, err)
		}
		if got, err := rd.Find(a.ctx, "t", blackboard.Percepts, "charge"); err != nil || got.ID != p.ID {
			t.Errorf("Find: %+v %v", got, err)
		}
		n := 0
		for _, err := range rd.Trace(a.ctx, "t") {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		for _, err := range rd.List(a.ctx, blackboard.Percepts, store.Filter{}) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		if v, err := rd.View(a.ctx, "t", false); err != nil || n != 2 || !v.Has(blackboard.Percepts, "charge") {
			t.Errorf("Trace and List read %d records, View %+v %v", n, v, err)
		}
	})
}

// racyStore refuses the first batch it is given as a concurrent writer's
// win would, without applying it.
type racyStore struct {
	store.Store
	raced bool
}

func (s *racyStore) Apply(ctx context.Context, b store.Batch) error {
	if !s.raced {
		s.raced = true
		return blackboard.ErrConflict
	}
	return s.Store.Apply(ctx, b)
}

// When the kernel must decide or write again (its batch lost a race),
// then is called again, and only the last call's records are written.
func TestFollowAfterARace(t *testing.T) {
	ctx := context.Background()
	s := &racyStore{Store: memstore.New()}
	k, err := kernel.New(kernel.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	d, err := k.Governor().Submit(ctx, "llm", kernel.Entry{TraceID: "t", Slot: blackboard.Actions, Kind: kernel.FallbackQueueForReview,
		Payload: action()}, func(d kernel.Decision, committed blackboard.Record) ([]kernel.Follow, error) {
		calls++
		return decisionRecord("t", kernel.FallbackQueueForReview, nil)(d, committed)
	})
	if err != nil || calls != 2 || len(d.Appended) != 1 {
		t.Fatalf("submit: %+v %v after %d calls of then, want 2", d, err, calls)
	}
	s.raced, calls = false, 0
	w, err := writeResult(k.Governor().Write(ctx, "payments", kernel.Entry{TraceID: "t", Slot: blackboard.Percepts, Kind: "refund_result"},
		func(rec blackboard.Record) ([]kernel.Follow, error) {
			calls++
			return writeRecord("issue_refund", audit.OutcomeExecuted, "EFFECT_SUCCEEDED", nil)(rec)
		}))
	if err != nil || calls != 2 || len(w.Appended) != 1 {
		t.Fatalf("write: %+v %v after %d calls of then, want 2", w, err, calls)
	}
	n := 0
	for r, err := range audit.List(ctx, k.Reader(), audit.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		if r.RecordID != d.Appended[0] && r.RecordID != w.Appended[0] {
			t.Errorf("decision record %s is not one the calls returned", r.RecordID)
		}
		n++
	}
	if n != 2 {
		t.Errorf("%d decision records, want 2", n)
	}
}
