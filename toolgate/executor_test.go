package toolgate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/sqlitestore"
)

// committed proposes a refund that needs no approval through the gate's
// checks and the kernel, and returns its job without running it: the
// state a crash right after the commit leaves.
func (d *desk) committed(trace, order string, amount float64) *job {
	d.t.Helper()
	args, _ := json.Marshal(map[string]any{"order_id": order, "amount": amount})
	res, j, err := d.g.x.propose(d.ctx, Call{Tool: "issue_refund", Args: args, Caller: "support", TraceID: trace})
	if err != nil || j == nil {
		d.t.Fatalf("propose: %+v %v", res, err)
	}
	return j
}

// attempts returns the attempt percepts of an action, oldest first.
func (d *desk) attempts(actionID string) []blackboard.Record {
	var out []blackboard.Record
	for _, r := range d.kinds(blackboard.Percepts, audit.KindAttempt) {
		if effectOf(r).ActionID == actionID {
			out = append(out, r)
		}
	}
	return out
}

func TestRetries(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		d.setEffect("issue_refund", func(_ context.Context, inv Invocation) (blackboard.Payload, error) {
			if inv.Attempt < 3 {
				return nil, Retryable(errFlaky)
			}
			return blackboard.Payload{"refund_id": "re_1"}, nil
		})
		d.ground("t", "A1")
		res := d.refund("t", "A1", 10)
		wantOutcome(t, "flaky refund", res, audit.OutcomeExecuted, reason.EffectSucceeded)
		calls := d.invocations("issue_refund")
		if len(calls) != 3 {
			t.Fatalf("%d calls, want 3", len(calls))
		}
		for i, c := range calls {
			if c.Attempt != i+1 || c.Key != calls[0].Key || c.ActionID != res.ActionID || c.Args["amount"] != 10.0 {
				t.Errorf("call %d: %+v", i, c)
			}
		}
		if want := "default/" + res.ActionID; calls[0].Key != want {
			t.Errorf("key %q, want %q", calls[0].Key, want)
		}
		// Each attempt was persisted before it ran, and names the one
		// before it and why it failed (the error's kind: its text is the
		// operator's log's).
		atts := d.attempts(res.ActionID)
		if len(atts) != 3 {
			t.Fatalf("%d attempt records, want 3", len(atts))
		}
		if !slices.Contains(atts[1].Provenance.InputRefs, atts[0].ID) || effectOf(atts[1]).PreviousError != errorKind(errFlaky) {
			t.Errorf("second attempt %+v", atts[1])
		}
		// The result: a percept of the tool's result kind, the output at
		// the top level, resting on the action and the last attempt.
		refunds := d.kinds(blackboard.Percepts, "refund")
		if len(refunds) != 1 || refunds[0].Payload["refund_id"] != "re_1" || effectOf(refunds[0]).Status != audit.StatusSucceeded ||
			effectOf(refunds[0]).Attempt != 3 || !slices.Equal(refunds[0].Provenance.InputRefs, []string{res.ActionID, atts[2].ID}) {
			t.Errorf("result percepts %+v", refunds)
		}
	})
}

func TestRetriesExhausted(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		d.setEffect("issue_refund", func(context.Context, Invocation) (blackboard.Payload, error) {
			return nil, Retryable(errFlaky)
		})
		d.ground("t", "A1")
		res := d.refund("t", "A1", 10)
		wantOutcome(t, "always flaky", res, audit.OutcomeFailed, reason.RetriesExhausted)
		if res.RootCause.Detail != errorKind(errFlaky) || !strings.Contains(res.Hint, "kept failing") {
			t.Errorf("root %+v hint %q", res.RootCause, res.Hint)
		}
		if n := len(d.invocations("issue_refund")); n != 3 {
			t.Errorf("%d calls, want the 3 the policy allows", n)
		}
		if len(d.kinds(blackboard.Percepts, "refund")) != 0 || len(d.kinds(blackboard.Percepts, audit.KindFailed)) != 1 {
			t.Error("a failure must be recorded as effect_failed, not as a refund")
		}
		recs := d.decisions(audit.Query{TraceID: "t", Tool: "issue_refund", Outcome: audit.OutcomeFailed})
		if len(recs) != 1 || recs[0].Code != reason.RetriesExhausted || recs[0].ID != res.DecisionID {
			t.Errorf("failure records %+v", recs)
		}
		again := d.execute(res.ActionID)
		if again.Outcome != audit.OutcomeFailed || again.Code != reason.RetriesExhausted || len(d.invocations("issue_refund")) != 3 {
			t.Errorf("execute after the failure: %+v (%d calls)", again, len(d.invocations("issue_refund")))
		}
	})
}

func TestPermanentFailures(t *testing.T) {
	for name, fn := range map[string]EffectFunc{
		"error": func(context.Context, Invocation) (blackboard.Payload, error) { return nil, errors.New("card declined") },
		"panic": func(context.Context, Invocation) (blackboard.Payload, error) { panic("nil map") },
	} {
		t.Run(name, func(t *testing.T) {
			onStores(t, func(t *testing.T, d *desk) {
				d.setEffect("issue_refund", fn)
				d.ground("t", "A1")
				res := d.refund("t", "A1", 10)
				if n := len(d.invocations("issue_refund")); n != 1 {
					t.Errorf("%d calls, want 1: retrying cannot fix it", n)
				}
				if name == "panic" {
					// It may have acted before it panicked.
					wantOutcome(t, name, res, audit.OutcomeFailed, reason.EffectUnknown)
					if !strings.Contains(res.Hint, "not known") || res.RootCause.Detail == "" {
						t.Errorf("hint %q root %+v", res.Hint, res.RootCause)
					}
					return
				}
				wantOutcome(t, name, res, audit.OutcomeFailed, reason.EffectFailed)
				if !strings.Contains(res.Hint, "The tool failed") || res.RootCause.Detail == "" {
					t.Errorf("hint %q root %+v", res.Hint, res.RootCause)
				}
			})
		})
	}
}

func TestOutputInvalid(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		d.setEffect("issue_refund", func(context.Context, Invocation) (blackboard.Payload, error) {
			return blackboard.Payload{audit.KeyEffect: "mine"}, nil
		})
		d.ground("t", "A1")
		res := d.refund("t", "A1", 10)
		wantOutcome(t, "output with the reserved key", res, audit.OutcomeFailed, reason.OutputInvalid)
		d.execute(res.ActionID)
		if n := len(d.invocations("issue_refund")); n != 1 {
			t.Errorf("%d calls, want 1: an effect that ran is not run again", n)
		}
	})
}

func TestResultAlreadyRecorded(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		wait := d.pendingRefund("t", "A1", 700)
		approval := d.approve("t", wait.ActionID, "human:alice", time.Hour)
		// Another process ran the refund, under the approval, and
		// recorded its result.
		j := d.job(wait.ActionID)
		j.approval = approval.ID
		att, err := d.g.x.startAttempt(d.ctx, j, 1, blackboard.Record{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.g.x.finish(d.ctx, j, 1, att, blackboard.Payload{"refund_id": "re_elsewhere"}, reason.EffectSucceeded, ""); err != nil {
			t.Fatal(err)
		}
		res := d.execute(wait.ActionID)
		wantOutcome(t, "execute after another process finished", res, audit.OutcomeExecuted, reason.EffectSucceeded)
		if res.Output["refund_id"] != "re_elsewhere" {
			t.Errorf("output %v, want the recorded one", res.Output)
		}
		if n := len(d.invocations("issue_refund")); n != 0 {
			t.Errorf("the effect ran %d times for a key with a recorded result", n)
		}
		// A second result for the key cannot be recorded.
		if _, err := j.e.handle.Write(d.ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Percepts, Kind: "refund",
			OnceKeys: []string{j.resultKey()}}, nil); !errors.Is(err, blackboard.ErrDuplicateKey) {
			t.Errorf("second result: %v, want ErrDuplicateKey", err)
		}
	})
}

func TestConcurrentExecute(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		wait := d.pendingRefund("t", "A1", 700)
		d.approve("t", wait.ActionID, "human:alice", time.Hour)
		d.setEffect("issue_refund", func(_ context.Context, inv Invocation) (blackboard.Payload, error) {
			time.Sleep(20 * time.Millisecond) // let the others arrive while it runs
			return blackboard.Payload{"refund_id": "re_" + inv.Key}, nil
		})
		const n = 8
		var wg sync.WaitGroup
		results := make([]Result, n)
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() { results[i], errs[i] = d.g.Execute(d.ctx, wait.ActionID) })
		}
		wg.Wait()
		for i := range n {
			if errs[i] != nil || results[i].Outcome != audit.OutcomeExecuted || results[i].DecisionID != results[0].DecisionID ||
				results[i].Output["refund_id"] != results[0].Output["refund_id"] {
				t.Errorf("driver %d: %+v %v", i, results[i], errs[i])
			}
		}
		if calls := d.invocations("issue_refund"); len(calls) != 1 {
			t.Errorf("the effect ran %d times, want once", len(calls))
		}
		if atts := d.attempts(wait.ActionID); len(atts) != 1 {
			t.Errorf("%d attempts, want 1", len(atts))
		}
	})
}

func TestRecoverAfterCrash(t *testing.T) {
	t.Run("attempt without result", func(t *testing.T) {
		onStores(t, func(t *testing.T, d *desk) {
			d.ground("t", "A1")
			j := d.committed("t", "A1", 10)
			// The crash: attempt 1 persisted, the effect may or may not have
			// run, no result.
			if _, err := d.g.x.startAttempt(d.ctx, j, 1, blackboard.Record{}, nil); err != nil {
				t.Fatal(err)
			}
			res, err := d.g.Recover(d.ctx)
			if err != nil || len(res) != 0 || len(d.invocations("issue_refund")) != 0 {
				t.Fatalf("Recover within the lease: %+v %v, want nothing done", res, err)
			}
			d.clock.Advance(2 * defaultLease)
			res, err = d.g.Recover(d.ctx)
			if err != nil || len(res) != 1 {
				t.Fatalf("Recover: %+v %v", res, err)
			}
			wantOutcome(t, "recovered", res[0], audit.OutcomeExecuted, reason.EffectSucceeded)
			calls := d.invocations("issue_refund")
			if len(calls) != 1 || calls[0].Attempt != 2 || calls[0].Key != j.key || res[0].ActionID != j.act.ID {
				t.Errorf("re-driven calls %+v, want attempt 2 with key %q", calls, j.key)
			}
			// Never again for a key with a result.
			d.clock.Advance(time.Hour)
			if res, err := d.g.Recover(d.ctx); err != nil || len(res) != 0 {
				t.Errorf("second Recover: %+v %v", res, err)
			}
			wantOutcome(t, "execute", d.execute(j.act.ID), audit.OutcomeExecuted, reason.EffectSucceeded)
			if n := len(d.invocations("issue_refund")); n != 1 {
				t.Errorf("%d calls, want 1", n)
			}
		})
	})
	t.Run("commit without attempt", func(t *testing.T) {
		onStores(t, func(t *testing.T, d *desk) {
			d.ground("t", "A1")
			j := d.committed("t", "A1", 10)
			if res, _ := d.g.Recover(d.ctx); len(res) != 0 {
				t.Fatalf("Recover of a fresh commit: %+v (a live Call may be about to run it)", res)
			}
			d.clock.Advance(2 * defaultLease)
			res, err := d.g.Recover(d.ctx)
			if err != nil || len(res) != 1 || res[0].Outcome != audit.OutcomeExecuted {
				t.Fatalf("Recover: %+v %v", res, err)
			}
			if calls := d.invocations("issue_refund"); len(calls) != 1 || calls[0].Attempt != 1 || calls[0].Key != j.key {
				t.Errorf("calls %+v", calls)
			}
		})
	})
	t.Run("attempts used up", func(t *testing.T) {
		onStores(t, func(t *testing.T, d *desk) {
			d.ground("t", "A1")
			j := d.committed("t", "A1", 10)
			var prev blackboard.Record
			for n := 1; n <= 3; n++ {
				att, err := d.g.x.startAttempt(d.ctx, j, n, prev, nil)
				if err != nil {
					t.Fatal(err)
				}
				prev = att
			}
			d.clock.Advance(2 * defaultLease)
			res, err := d.g.Recover(d.ctx)
			if err != nil || len(res) != 1 {
				t.Fatalf("Recover: %+v %v", res, err)
			}
			wantOutcome(t, "three attempts left without result", res[0], audit.OutcomeFailed, reason.RetriesExhausted)
			if n := len(d.invocations("issue_refund")); n != 0 {
				t.Errorf("%d calls beyond the retry budget", n)
			}
		})
	})
	t.Run("escalation without its fallback", func(t *testing.T) {
		onStores(t, func(t *testing.T, d *desk) {
			wait := d.pendingRefund("t", "A1", 700)
			denial, err := d.g.Approver("human:bob").Decide(d.ctx, audit.Approval{TraceID: "t", ActionID: wait.ActionID, Digest: d.digest(wait.ActionID), Decision: audit.Denied, Note: "no"})
			if err != nil {
				t.Fatal(err)
			}
			j := d.job(wait.ActionID)
			// The crash: the escalation is recorded as the action's
			// result, its fallback never submitted.
			if _, err := d.g.x.writeEscalation(d.ctx, j, reason.ApprovalDenied, denial); err != nil {
				t.Fatal(err)
			}
			d.clock.Advance(2 * defaultLease)
			res, err := d.g.Recover(d.ctx)
			if err != nil || len(res) != 1 {
				t.Fatalf("Recover: %+v %v, want the escalation finished", res, err)
			}
			wantOutcome(t, "recovered escalation", res[0], audit.OutcomeRefused, reason.ApprovalDenied)
			if res[0].FallbackID == "" || d.committedActions(kernel.FallbackQueueForReview) != 1 {
				t.Errorf("fallback %q, %d committed; want one", res[0].FallbackID, d.committedActions(kernel.FallbackQueueForReview))
			}
			// Once it is there, Recover leaves the action alone.
			if res, err := d.g.Recover(d.ctx); err != nil || len(res) != 0 {
				t.Errorf("second Recover: %+v %v", res, err)
			}
			if n := d.committedActions(kernel.FallbackQueueForReview); n != 1 || len(d.invocations("issue_refund")) != 0 {
				t.Errorf("%d fallbacks, %d refunds; want 1 and none", n, len(d.invocations("issue_refund")))
			}
		})
	})
	t.Run("approvals", func(t *testing.T) {
		onStores(t, func(t *testing.T, d *desk) {
			waiting := d.pendingRefund("t1", "A1", 700)
			approved := d.pendingRefund("t2", "A2", 700)
			denied := d.pendingRefund("t3", "A3", 700)
			d.approve("t2", approved.ActionID, "human:alice", 24*time.Hour)
			if _, err := d.g.Approver("human:alice").Decide(d.ctx, audit.Approval{TraceID: "t3", ActionID: denied.ActionID, Digest: d.digest(denied.ActionID), Decision: audit.Denied, Note: "no"}); err != nil {
				t.Fatal(err)
			}
			d.clock.Advance(2 * defaultLease)
			res, err := d.g.Recover(d.ctx)
			if err != nil || len(res) != 2 {
				t.Fatalf("Recover: %+v %v", res, err)
			}
			got := map[string]Result{}
			for _, r := range res {
				got[r.ActionID] = r
			}
			wantOutcome(t, "approved", got[approved.ActionID], audit.OutcomeExecuted, reason.EffectSucceeded)
			wantOutcome(t, "denied", got[denied.ActionID], audit.OutcomeRefused, reason.ApprovalDenied)
			if _, ok := got[waiting.ActionID]; ok {
				t.Error("Recover ran an action no one approved")
			}
			if n := len(d.invocations("issue_refund")); n != 1 {
				t.Errorf("%d refunds ran, want the approved one", n)
			}
		})
	})
}

func TestCancelledDuringEffect(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		started := make(chan struct{})
		d.setEffect("issue_refund", func(ctx context.Context, inv Invocation) (blackboard.Payload, error) {
			if inv.Attempt == 1 {
				close(started)
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return blackboard.Payload{"refund_id": "re_2"}, nil
		})
		d.ground("t", "A1")
		ctx, cancel := context.WithCancel(d.ctx)
		go func() { <-started; cancel() }()
		res, err := d.g.Call(ctx, Call{Tool: "issue_refund", Args: json.RawMessage(`{"order_id":"A1","amount":10}`), Caller: "support", TraceID: "t"})
		if !errors.Is(err, context.Canceled) || res.ActionID == "" {
			t.Fatalf("cancelled call: %+v %v, want the error and the action id", res, err)
		}
		// The attempt stays pending; once its lease is over, the next
		// driver takes it up with the same key.
		d.clock.Advance(2 * defaultLease)
		again := d.execute(res.ActionID)
		wantOutcome(t, "execute after the cancelled call", again, audit.OutcomeExecuted, reason.EffectSucceeded)
		calls := d.invocations("issue_refund")
		if len(calls) != 2 || calls[1].Attempt != 2 || calls[1].Key != calls[0].Key {
			t.Errorf("calls %+v", calls)
		}
	})
}

func TestIdempotencyKeyFromOnceKey(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		d.ground("t", "A1")
		res := d.refund("t", "A1", 10)
		wantOutcome(t, "refund", res, audit.OutcomeExecuted, reason.EffectSucceeded)
		want, err := d.k.Governor().OnceKeyOf(d.ctx, res.ActionID)
		if err != nil {
			t.Fatal(err)
		}
		if calls := d.invocations("issue_refund"); len(calls) != 1 || calls[0].Key != want {
			t.Errorf("key %q, want the once-key %q", calls[0].Key, want)
		}
		// The once-key makes a second refund of the order a duplicate,
		// in any trace.
		d.ground("t2", "A1")
		wantOutcome(t, "refund of the same order elsewhere", d.refund("t2", "A1", 10), audit.OutcomeRefused, reason.DuplicateAction)
	}, func(su *setup) {
		su.tools[1].Once = &kernel.OnceKey{Fields: []string{"order_id"}}
	})
}

// TestApprovalCheckIsWhatStops is the attack without the check: the
// executor itself runs whatever committed action it is handed; only
// Execute's approval check holds back one that waits for approval.
func TestApprovalCheckIsWhatStops(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		d.unchecked("the test runs an action that waits for approval without one")
		wait := d.pendingRefund("t", "A1", 700)
		wantOutcome(t, "execute", d.execute(wait.ActionID), audit.OutcomePendingApproval, reason.ApprovalRequired)
		act, e, gd, err := d.g.x.gated(d.ctx, wait.ActionID)
		if err != nil {
			t.Fatal(err)
		}
		j, _ := d.g.x.newJob(d.ctx, e, act, gd.Context)
		res, err := d.g.x.run(d.ctx, j)
		if err != nil || res.Outcome != audit.OutcomeExecuted || len(d.invocations("issue_refund")) != 1 {
			t.Errorf("run without the check: %+v %v, want the unapproved refund executed", res, err)
		}
	})
}

func TestDecisionRecordsForEveryOutcome(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		d.setEffect("search_kb", func(context.Context, Invocation) (blackboard.Payload, error) { return nil, errors.New("index offline") })
		d.ground("t", "A1")                                         // lookup_order: committed + executed
		d.call("t", "support", "", "search_kb", `{"query":"x"}`)    // refused: contract
		d.call("t", "researcher", "", "search_kb", `{"query":"x"}`) // committed + failed
		wait := d.refund("t", "A1", 700)                            // pending approval
		if _, err := d.g.Approver("human:bob").Decide(d.ctx, audit.Approval{TraceID: "t", ActionID: wait.ActionID, Digest: d.digest(wait.ActionID), Decision: audit.Denied, Note: "no"}); err != nil {
			t.Fatal(err)
		}
		d.execute(wait.ActionID) // escalated + the fallback's commit
		d.refund("t", "A1", 10)  // refused: the grounding is used up
		count := func(f audit.Query) map[audit.Outcome]int {
			out := map[audit.Outcome]int{}
			for _, r := range d.decisions(f) {
				out[r.Outcome]++
			}
			return out
		}
		all := count(audit.Query{TraceID: "t"})
		want := map[audit.Outcome]int{audit.OutcomeCommitted: 3, audit.OutcomeExecuted: 1, audit.OutcomeRefused: 2,
			audit.OutcomeFailed: 1, audit.OutcomePendingApproval: 1, audit.OutcomeEscalated: 1}
		if fmt.Sprint(all) != fmt.Sprint(want) {
			t.Errorf("records by outcome %v, want %v", all, want)
		}
		refunds := count(audit.Query{TraceID: "t", Tool: "issue_refund"})
		if fmt.Sprint(refunds) != fmt.Sprint(map[audit.Outcome]int{audit.OutcomeCommitted: 1, audit.OutcomePendingApproval: 1,
			audit.OutcomeEscalated: 1, audit.OutcomeRefused: 1}) {
			t.Errorf("issue_refund records %v", refunds)
		}
		failed := d.decisions(audit.Query{Outcome: audit.OutcomeFailed})
		if len(failed) != 1 || failed[0].Kind != "search_kb" || failed[0].Context["error"] != "an error of type *errors.errorString" || failed[0].Context["caller"] != "researcher" {
			t.Errorf("failed records %+v", failed)
		}
		// Every record about a stored record lands next to it, written
		// in the same batch.
		for _, r := range d.decisions(audit.Query{TraceID: "t"}) {
			if r.Subject == "" {
				continue
			}
			if _, err := d.store.Get(d.ctx, r.Subject); err != nil {
				t.Errorf("record %s names %s: %v", r.ID, r.Subject, err)
			}
		}
		if n := len(d.decisions(audit.Query{TraceID: "other"})); n != 0 {
			t.Errorf("%d records in another trace", n)
		}
	})
}

// Recover run by several processes at once over one database re-drives a
// crashed attempt once.
func TestRecoverInSeveralProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bk.db")
	open := func() store.Store {
		s, err := sqlitestore.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	d := newDesk(t, open())
	d.ground("t", "A1")
	j := d.committed("t", "A1", 10)
	if _, err := d.g.x.startAttempt(d.ctx, j, 1, blackboard.Record{}, nil); err != nil {
		t.Fatal(err)
	}
	d.clock.Advance(2 * defaultLease)
	d.setEffect("issue_refund", func(context.Context, Invocation) (blackboard.Payload, error) {
		time.Sleep(20 * time.Millisecond)
		return blackboard.Payload{"refund_id": "re_1"}, nil
	})
	gates := []*Gate{d.g}
	for range 3 {
		g, err := New(d.ctx, Config{
			Kernel: kernel.Config{
				Store:       open(),
				Clock:       d.clock.Now,
				BeliefSpecs: []kernel.BeliefSpec{{Kind: "refund_due", DependsOn: []string{"order"}}},
			},
			Tools:     d.tools,
			Contracts: d.contracts,
		})
		if err != nil {
			t.Fatal(err)
		}
		gates = append(gates, g)
	}
	var wg sync.WaitGroup
	for _, g := range gates {
		wg.Go(func() {
			res, err := g.Recover(d.ctx)
			if err != nil {
				t.Errorf("Recover: %v", err)
			}
			for _, r := range res {
				if r.Outcome != audit.OutcomeExecuted || r.ActionID != j.act.ID {
					t.Errorf("recovered %+v", r)
				}
			}
		})
	}
	wg.Wait()
	if calls := d.invocations("issue_refund"); len(calls) != 1 || calls[0].Attempt != 2 || calls[0].Key != j.key {
		t.Errorf("effect calls %+v, want one, attempt 2, key %q", calls, j.key)
	}
}
