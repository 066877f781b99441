package toolgate

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/failure"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// controlsRecords counts the run controls records of a trace.
func (d *desk) controlsRecords(trace string) int {
	n := 0
	for _, r := range d.kinds(blackboard.Evidence, audit.KindControls) {
		if r.Provenance.TraceID == trace {
			n++
		}
	}
	return n
}

// Controls only tighten: read_only and a prohibition are recorded (one
// record each, through the Governor), the same controls again record
// nothing, and a looser set is a *controlsError that records nothing.
func TestRestrictOnlyTightens(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		got, err := d.g.Controls(d.ctx, "t")
		if err != nil || got.ReadOnly || len(got.Prohibited) != 0 {
			t.Fatalf("fresh trace: %+v %v, want normal", got, err)
		}
		if err := d.g.Restrict(d.ctx, "t", Controls{ReadOnly: true}); err != nil {
			t.Fatal(err)
		}
		if err := d.g.Restrict(d.ctx, "t", Controls{ReadOnly: true, Prohibited: []string{"search_kb", "lookup_order"}}); err != nil {
			t.Fatal(err)
		}
		if err := d.g.Restrict(d.ctx, "t", Controls{ReadOnly: true, Prohibited: []string{"lookup_order", "search_kb"}}); err != nil {
			t.Fatal(err)
		}
		if n := d.controlsRecords("t"); n != 2 {
			t.Errorf("%d controls records, want 2 (the same controls again record nothing)", n)
		}
		got, err = d.g.Controls(d.ctx, "t")
		if err != nil || !got.ReadOnly || !slices.Equal(got.Prohibited, []string{"lookup_order", "search_kb"}) {
			t.Errorf("controls: %+v %v", got, err)
		}
		recs := d.kinds(blackboard.Evidence, audit.KindControls)
		last := recs[len(recs)-1]
		if last.Provenance.Role != blackboard.RoleKernel || last.Payload["mode"] != "read_only" || last.Payload[keyPolicy] != d.g.Policy().Hash {
			t.Errorf("controls record: %+v", last)
		}
		for _, loose := range []Controls{
			{Prohibited: []string{"lookup_order", "search_kb"}},
			{ReadOnly: true, Prohibited: []string{"search_kb"}},
			{},
		} {
			err := d.g.Restrict(d.ctx, "t", loose)
			var ce *controlsError
			if !errors.Is(err, blackboard.ErrPermission) || !errors.As(err, &ce) || !ce.Current.ReadOnly {
				t.Errorf("Restrict %+v: %v, want a *controlsError", loose, err)
			}
			if err != nil && loose.ReadOnly && !strings.Contains(err.Error(), `prohibited tool "lookup_order"`) {
				t.Errorf("the error does not say what is dropped: %v", err)
			}
		}
		if n := d.controlsRecords("t"); n != 2 {
			t.Errorf("%d controls records after looser ones, want 2", n)
		}
		for _, bad := range []Controls{{Prohibited: []string{"format_disk"}}} {
			if err := d.g.Restrict(d.ctx, "u", bad); !errors.Is(err, blackboard.ErrInvalidInput) {
				t.Errorf("Restrict %+v: %v, want blackboard.ErrInvalidInput", bad, err)
			}
		}
		if n := d.controlsRecords("u"); n != 0 {
			t.Errorf("%d records for bad controls", n)
		}
		// Another gate over the store sees the same controls.
		other, err := d.gate(Config{Tools: d.tools, Contracts: d.contracts}).Controls(d.ctx, "t")
		if err != nil || !other.ReadOnly || len(other.Prohibited) != 2 {
			t.Errorf("another gate reads %+v %v", other, err)
		}
	})
}

// A model in a read-only trace calls an effectful tool it was not shown:
// READ_ONLY_MODE before the kernel (no action proposed), with a decision
// record, a hint and a typed failure; read-only tools still run.
func TestAttackEffectfulCallInReadOnlyTrace(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		d.ground("t", "A1")
		if err := d.g.Restrict(d.ctx, "t", Controls{ReadOnly: true}); err != nil {
			t.Fatal(err)
		}
		specs, err := d.g.Surface(d.ctx, "support", "t", "")
		if err != nil {
			t.Fatal(err)
		}
		if names := specNames(specs); !slices.Equal(names, []string{"lookup_order"}) {
			t.Errorf("surfaced %v in a read-only trace, want only lookup_order", names)
		}
		before := d.committedActions("issue_refund")
		res := d.refund("t", "A1", 100)
		wantOutcome(t, "refund in a read-only trace", res, audit.OutcomeRefused, reason.ReadOnlyMode)
		if res.Hint == "" || res.DecisionID == "" {
			t.Errorf("refusal without hint or decision record: %+v", res)
		}
		if f, ok := res.Failure(); !ok || f.Status() != failure.StatusAuthDenied || f.Retryable() {
			t.Errorf("failure: %+v %v", f, ok)
		}
		if d.committedActions("issue_refund") != before || len(d.invocations("issue_refund")) != 0 {
			t.Error("a refund ran in a read-only trace")
		}
		for _, r := range d.kinds(blackboard.Actions, "issue_refund") {
			t.Errorf("a refund was proposed: %s", r.ID)
		}
		dr := d.decisions(audit.Query{TraceID: "t", Tool: "issue_refund"})
		if len(dr) != 1 || dr[0].Code != reason.ReadOnlyMode || dr[0].Context[keyPolicy] != d.g.Policy().Hash {
			t.Errorf("decision records: %+v", dr)
		}
		wantOutcome(t, "lookup in a read-only trace", d.call("t", "support", "", "lookup_order", `{"order_id":"A1"}`), audit.OutcomeExecuted, reason.EffectSucceeded)
		// Another trace is untouched.
		d.ground("u", "A1")
		wantOutcome(t, "refund in a normal trace", d.refund("u", "A1", 100), audit.OutcomeExecuted, reason.EffectSucceeded)
	})
}

// A prohibited tool, read-only or not, is TOOL_PROHIBITED and never
// surfaced. A read-only tool's call is checked in the kernel's decision
// (no read of its own on that path): refused there, it runs nothing.
func TestProhibitedTool(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		if err := d.g.Restrict(d.ctx, "t", Controls{Prohibited: []string{"lookup_order"}}); err != nil {
			t.Fatal(err)
		}
		specs, err := d.g.Surface(d.ctx, "support", "t", "")
		if err != nil {
			t.Fatal(err)
		}
		if names := specNames(specs); slices.Contains(names, "lookup_order") {
			t.Errorf("surfaced %v", names)
		}
		res := d.call("t", "support", "", "lookup_order", `{"order_id":"A1"}`)
		wantOutcome(t, "prohibited lookup", res, audit.OutcomeRefused, reason.ToolProhibited)
		if len(d.invocations("lookup_order")) != 0 {
			t.Error("a prohibited tool ran")
		}
		if f, ok := res.Failure(); !ok || f.Status() != failure.StatusAuthDenied {
			t.Errorf("failure: %+v %v", f, ok)
		}
	})
}

// An approval given before the trace became read-only never runs its
// action: Execute, Resume and Recover refuse it for good, and the effect
// is never called.
func TestAttackApprovalResumedAfterReadOnly(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		wait := d.pendingRefund("t", "A1", 700)
		d.approve("t", wait.ActionID, "manager", time.Hour)
		if err := d.g.Restrict(d.ctx, "t", Controls{ReadOnly: true}); err != nil {
			t.Fatal(err)
		}
		res, err := d.g.Resume(d.ctx, "t", wait.ActionID, []byte(`{"order_id":"A1","amount":700}`))
		if err != nil {
			t.Fatal(err)
		}
		wantOutcome(t, "approved refund resumed in a read-only trace", res, audit.OutcomeRefused, reason.ReadOnlyMode)
		wantOutcome(t, "executed again", d.execute(wait.ActionID), audit.OutcomeRefused, reason.ReadOnlyMode)
		d.clock.Advance(2 * defaultLease)
		if _, err := d.g.Recover(d.ctx); err != nil {
			t.Fatal(err)
		}
		if n := len(d.invocations("issue_refund")); n != 0 {
			t.Errorf("the refund ran %d times", n)
		}
		if n := len(d.kinds(blackboard.Percepts, audit.KindAttempt)); n != 1 { // lookup_order's
			t.Errorf("%d attempts, want only the lookup's", n)
		}
	})
}

// An action of a prohibited tool waiting in Recover's hands is refused,
// not run.
func TestRecoverHonoursProhibition(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		wait := d.pendingRefund("t", "A1", 700)
		d.approve("t", wait.ActionID, "manager", time.Hour)
		if err := d.g.Restrict(d.ctx, "t", Controls{Prohibited: []string{"issue_refund"}}); err != nil {
			t.Fatal(err)
		}
		d.clock.Advance(2 * defaultLease)
		if _, err := d.g.Recover(d.ctx); err != nil {
			t.Fatal(err)
		}
		if n := len(d.invocations("issue_refund")); n != 0 {
			t.Errorf("the refund ran %d times", n)
		}
		dr := d.decisions(audit.Query{TraceID: "t", Tool: "issue_refund", Outcome: audit.OutcomeRefused})
		if len(dr) != 1 || dr[0].Code != reason.ToolProhibited {
			t.Errorf("refusals: %+v", dr)
		}
	})
}

func specNames(specs []Spec) []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.Name
	}
	return out
}

// Concurrent Restricts lose no tightening: each adds its own prohibition
// to what it read (again, on blackboard.ErrPermission), and every one lands once;
// four goroutines making the trace read-only write one record.
func TestRestrictConcurrent(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for _, tool := range []string{"lookup_order", "issue_refund", "search_kb"} {
			wg.Go(func() {
				for {
					cur, err := d.g.Controls(d.ctx, "t")
					if err != nil {
						errs <- err
						return
					}
					err = d.g.Restrict(d.ctx, "t", Controls{ReadOnly: cur.ReadOnly, Prohibited: append(cur.Prohibited, tool)})
					if !errors.Is(err, blackboard.ErrPermission) {
						if err != nil {
							errs <- err
						}
						return
					}
				}
			})
		}
		wg.Wait()
		for range 4 {
			wg.Go(func() {
				cur, err := d.g.Controls(d.ctx, "u")
				if err == nil {
					err = d.g.Restrict(d.ctx, "u", Controls{ReadOnly: true, Prohibited: cur.Prohibited})
				}
				if err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		got, err := d.g.Controls(d.ctx, "t")
		if err != nil || len(got.Prohibited) != 3 || d.controlsRecords("t") != 3 {
			t.Errorf("controls %+v %v, %d records; want 3 tools, 3 records", got, err, d.controlsRecords("t"))
		}
		// Each record holds the controls in full: the last, all three.
		var last blackboard.Record
		for _, r := range d.kinds(blackboard.Evidence, audit.KindControls) {
			if r.Provenance.TraceID == "t" {
				last = r
			}
		}
		if p, _ := last.Payload["prohibited"].([]any); len(p) != 3 {
			t.Errorf("last controls record holds %v", last.Payload)
		}
		if got, err := d.g.Controls(d.ctx, "u"); err != nil || !got.ReadOnly || d.controlsRecords("u") != 1 {
			t.Errorf("controls %+v %v, %d records; want read_only, 1 record", got, err, d.controlsRecords("u"))
		}
	})
}

// A run controls record an evidence handle writes (it may write evidence
// of any kind) loosens nothing: the gate's keys still decide an effectful
// call, and the kernel's check, which reads the trace's latest record,
// fails closed on one the gate did not write.
func TestAttackForgedControlsRecord(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		d.ground("t", "A1")
		if err := d.g.Restrict(d.ctx, "t", Controls{ReadOnly: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := d.k.Handle(blackboard.RoleEvidence, "mallory").Write(d.ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Evidence, Kind: audit.KindControls,
			Payload: blackboard.Payload{"mode": "normal", "prohibited": []any{}}}); err != nil {
			t.Fatal(err)
		}
		if got, err := d.g.Controls(d.ctx, "t"); err != nil || !got.ReadOnly {
			t.Errorf("controls after a forged record: %+v %v", got, err)
		}
		wantOutcome(t, "refund", d.refund("t", "A1", 100), audit.OutcomeRefused, reason.ReadOnlyMode)
		wantOutcome(t, "lookup", d.call("t", "support", "", "lookup_order", `{"order_id":"A1"}`), audit.OutcomeRefused, reason.ToolProhibited)
		if n := len(d.invocations("issue_refund")); n != 0 {
			t.Errorf("%d refunds ran", n)
		}
	})
}

// A tool that rests on no belief is not thereby read-only: an email, a
// post, a search with a side effect. In a read-only trace a tool that does
// not declare ReadOnly is refused like any other effect, before it runs,
// and is not surfaced: the mode fails closed.
func TestAttackUndeclaredToolInReadOnlyTrace(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		if err := d.g.Restrict(d.ctx, "t", Controls{ReadOnly: true}); err != nil {
			t.Fatal(err)
		}
		specs, err := d.g.Surface(d.ctx, "researcher", "t", "")
		if err != nil || len(specs) != 0 {
			t.Errorf("surfaced %v (%v) in a read-only trace, want nothing", specNames(specs), err)
		}
		res := d.call("t", "researcher", "", "search_kb", `{"query":"refund"}`)
		wantOutcome(t, "an undeclared tool in a read-only trace", res, audit.OutcomeRefused, reason.ReadOnlyMode)
		if n := len(d.invocations("search_kb")); n != 0 {
			t.Errorf("search_kb ran %d times in a read-only trace", n)
		}
	})
}
