package toolgate

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/failure"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// httpError is an error that knows its HTTP status.
type httpError int

func (e httpError) Error() string   { return fmt.Sprintf("upstream answered %d", int(e)) }
func (e httpError) HTTPStatus() int { return int(e) }

func TestTypedEffectFailures(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		for _, tc := range []struct {
			name   string
			err    error
			status failure.ExecStatus
			legacy bool
		}{
			{"a typed failure", failure.New(failure.StatusAuthExpired, "token expired at 12:00"), failure.StatusAuthExpired, false},
			{"an HTTP status", httpError(405), failure.StatusEndpointUnknown, false},
			{"a wrapped one", fmt.Errorf("calling crm: %w", httpError(404)), failure.StatusNotFound, false},
			{"an untyped error", errors.New("something odd happened"), failure.StatusUnknown, true},
		} {
			d.setEffect("search_kb", func(context.Context, Invocation) (blackboard.Payload, error) { return nil, tc.err })
			res := d.call("t", "researcher", "", "search_kb", `{"query":"`+tc.name+`"}`)
			wantOutcome(t, tc.name, res, audit.OutcomeFailed, reason.EffectFailed)
			f, ok := res.Failure()
			if !ok || f.Status() != tc.status || f.Legacy() != tc.legacy {
				t.Errorf("%s: Failure() = %v (legacy %v), want %s (legacy %v)", tc.name, f, f.Legacy(), tc.status, tc.legacy)
			}
			recs := d.decisions(audit.Query{TraceID: "t", Outcome: audit.OutcomeFailed})
			last := recs[len(recs)-1]
			if got, _ := last.Context["execution_status"].(string); !tc.legacy && got != string(tc.status) || tc.legacy && got != "" {
				t.Errorf("%s: the record says %q", tc.name, got)
			}
		}
		// A typed failure comes back the same from a recorded result.
		d.setEffect("search_kb", func(context.Context, Invocation) (blackboard.Payload, error) {
			return nil, failure.New(failure.StatusRateLimited, "slow down").WithRetryable(false)
		})
		res := d.call("t", "researcher", "", "search_kb", `{"query":"again"}`)
		again, err := d.g.Execute(d.ctx, res.ActionID)
		if err != nil {
			t.Fatal(err)
		}
		f, _ := again.Failure()
		if f.Category() != failure.Category("rate_limit") || f.Retryable() {
			t.Errorf("recorded failure %v retryable %v", f, f.Retryable())
		}
	})
}

func TestExpectCatchesPartialSuccess(t *testing.T) {
	expect := func(su *setup) {
		for i := range su.tools {
			if su.tools[i].Name == "search_kb" {
				su.tools[i].Expect = &failure.Expect{Data: "hits", NonEmpty: true, Required: []string{"hits[].title"}, PerResource: "sources"}
			}
		}
	}
	onStores(t, func(t *testing.T, d *desk) {
		for i, tc := range []struct {
			name   string
			out    blackboard.Payload
			status failure.ExecStatus
		}{
			{"mixed results", blackboard.Payload{"hits": []any{map[string]any{"title": "a"}},
				"sources": map[string]any{"eu": map[string]any{"ok": true}, "us": map[string]any{"status": 404.0}}}, failure.StatusIncompleteFetch},
			{"the tool's own partial status", blackboard.Payload{"status": "partial_error", "hits": []any{map[string]any{"title": "a"}},
				"sources": []any{}}, failure.StatusIncompleteFetch},
			{"empty where data is expected", blackboard.Payload{"hits": []any{}, "sources": []any{}}, failure.StatusSilentPartialFetch},
			{"a field missing", blackboard.Payload{"hits": []any{map[string]any{"url": "x"}}, "sources": []any{}}, failure.StatusSchemaIncomplete},
			{"its own typed signal", blackboard.Payload{"execution_status": string(failure.StatusAuthExpired), "error": "session expired"}, failure.StatusAuthExpired},
		} {
			d.setEffect("search_kb", func(context.Context, Invocation) (blackboard.Payload, error) { return tc.out, nil })
			res := d.call("t", "researcher", "", "search_kb", fmt.Sprintf(`{"query":"q%d"}`, i))
			wantOutcome(t, tc.name, res, audit.OutcomeFailed, reason.EffectIncomplete)
			if f, ok := res.Failure(); !ok || f.Status() != tc.status || f.Legacy() {
				t.Errorf("%s: Failure() = %v, want %s", tc.name, f, tc.status)
			}
			if res.Hint == "" || res.Output["execution_status"] != string(tc.status) {
				t.Errorf("%s: hint %q output %v", tc.name, res.Hint, res.Output)
			}
		}
		if n := len(d.invocations("search_kb")); n != 5 {
			t.Errorf("%d effects ran, want 5: a partial success is not retried", n)
		}
		if recs := d.kinds(blackboard.Percepts, "search_kb_result"); len(recs) != 0 {
			t.Errorf("%d partial results recorded as the tool's result", len(recs))
		}
		// A complete answer passes.
		d.setEffect("search_kb", func(context.Context, Invocation) (blackboard.Payload, error) {
			return blackboard.Payload{"hits": []any{map[string]any{"title": "refunds"}}, "sources": map[string]any{"eu": map[string]any{"ok": true}}}, nil
		})
		wantOutcome(t, "complete", d.call("t", "researcher", "", "search_kb", `{"query":"complete"}`), audit.OutcomeExecuted, reason.EffectSucceeded)
	}, expect)
}

func TestResultFailureTable(t *testing.T) {
	skill := []reason.Code{reason.ToolUnknown, reason.InvalidArguments, reason.ApprovalMismatch, reason.ArgumentsChanged, reason.ArgumentNotBound, reason.RuleInputTooLarge,
		reason.RuleViolated, reason.RuleError, reason.FieldMismatch, reason.Blocked("no_refund_twice"),
		reason.MissingEvidence, reason.StaleEvidence, reason.SupersededEvidence, reason.TTLExpired,
		reason.NoCommittedBelief, reason.BeliefNotSatisfied, reason.PlanMissingBelief,
		reason.PlanBeliefNotSatisfied, reason.OnceKeyMissing, reason.PredictionMissingBelief}
	for _, c := range skill {
		f, ok := Result{Outcome: audit.OutcomeRefused, Code: c}.Failure()
		if !ok || f.Category() != "format_error" && f.Category() != "code_syntax" && f.Category() != "function_mismatch" {
			t.Errorf("%s: %v, want a skill failure", c, f)
		}
		if yields(f) {
			t.Errorf("%s ends the lease; a skill failure must not", c)
		}
	}
	for code, want := range map[reason.Code]failure.Route{
		reason.NoFeasiblePlan:     failure.RouteSlowLoop,
		reason.UngroundedAction:   failure.RouteSlowLoop,
		reason.DuplicateAction:    failure.RouteAbort,
		reason.ToolNotPermitted:   failure.RouteEscalate,
		reason.ToolNotForIntent:   failure.RouteEscalate,
		reason.ApprovalDenied:     failure.RouteEscalate,
		reason.ApprovalExpired:    failure.RouteEscalate,
		reason.UnresolvedConflict: failure.RouteEscalate,
		reason.LowConfidence:      failure.RouteEscalate,
		reason.NegativePrediction: failure.RouteEscalate,
		reason.BudgetExceeded:     failure.RouteAbort,
		reason.LoopDetected:       failure.RouteAbort,
		reason.OutputInvalid:      failure.RouteAbort,
		"SOMETHING_NEW":           failure.RouteEscalate,
	} {
		f, ok := Result{Outcome: audit.OutcomeRefused, Code: code, Hint: "h"}.Failure()
		if !ok {
			t.Fatalf("%s: no failure", code)
		}
		if !yields(f) {
			t.Errorf("%s (%s) keeps the lease; it must end it", code, f.Category())
		}
		if d := failure.RemedyFor(f, 1, 3); d.Route != want {
			t.Errorf("%s (%s): route %s, want %s", code, f.Category(), d.Route, want)
		}
		if f.Message() != string(code)+": h" {
			t.Errorf("%s: message %q", code, f.Message())
		}
	}
	// The root cause decides.
	f, _ := Result{Outcome: audit.OutcomeRefused, Code: reason.NoCommittedBelief, RootCause: kernel.Cause{Code: reason.UnresolvedConflict}}.Failure()
	if f.Category() != failure.Category("unknown") {
		t.Errorf("root cause ignored: %v", f)
	}
	for _, r := range []Result{{Outcome: audit.OutcomeExecuted, Code: reason.EffectSucceeded}, {Outcome: audit.OutcomePendingApproval, Code: reason.ApprovalRequired}, {}} {
		if f, ok := r.Failure(); ok {
			t.Errorf("%s is a failure: %v", r.Outcome, f)
		}
	}
}

// yields reports whether f ends a worker's grant at once.
func yields(f failure.Failure) bool {
	cont, _ := failure.NewGrant(2).Turn("t", f)
	return !cont
}
