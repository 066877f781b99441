package toolgate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/failure"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// unkeyed makes the desk's refund an effect without a key the world
// honours: no once-key, not Idempotent (an email, say).
func unkeyed(su *setup) {
	for i := range su.tools {
		if su.tools[i].Name == "issue_refund" {
			su.tools[i].Idempotent = false
		}
	}
}

// withLease gives the desk's gate a short lease, in real time for the
// effect's context.
func withLease(d time.Duration) func(*setup) {
	return func(su *setup) { su.cfg.Lease = d }
}

// TestAttackUnkeyedAtMostOnce crashes the drivers of many calls of an
// effect without a once-key, at the worst moment (after the effect acted,
// before its result was recorded), in several ways, then lets several
// gates over the store recover and execute every action concurrently,
// round after round, past the lease each time. Each call acts in the world
// at most once; one that a crash cut short is EFFECT_UNKNOWN, typed
// FAILED_UNKNOWN and not retryable, and nothing drives it again.
func TestAttackUnkeyedAtMostOnce(t *testing.T) {
	const lease = 300 * time.Millisecond
	onStores(t, func(t *testing.T, d *desk) {
		const calls = 30
		var mu sync.Mutex
		acted := map[string]int{}   // the world: how often each call's effect took place
		mode := map[string]string{} // order id -> how its first attempt ends
		crash := map[string]context.CancelFunc{}
		act := func(inv Invocation) {
			mu.Lock()
			acted[inv.ActionID]++
			mu.Unlock()
		}
		d.setEffect("issue_refund", func(ctx context.Context, inv Invocation) (blackboard.Payload, error) {
			order := inv.Args["order_id"].(string)
			mu.Lock()
			m, cancel := mode[order], crash[order]
			mu.Unlock()
			if inv.Attempt > 1 && m != "retryable" {
				act(inv) // a second start acts again: the world has no key to dedup it by
				return blackboard.Payload{"sent": true}, nil
			}
			switch m {
			case "crash": // the process dies after the effect acted
				act(inv)
				cancel()
				return nil, context.Canceled
			case "past_lease": // the effect acted, then hung until its context ended
				act(inv)
				<-ctx.Done()
				return nil, ctx.Err()
			case "panic": // acted, then panicked: a failure recorded, not a crash
				act(inv)
				panic("mail server went away")
			case "retryable": // failed before acting, and says so: a retry is safe
				if inv.Attempt == 1 {
					return nil, Retryable(errFlaky)
				}
			}
			act(inv)
			return blackboard.Payload{"sent": true}, nil
		})
		modes := []string{"crash", "past_lease", "panic", "retryable", "none"}
		ids := make([]string, calls)
		orders := make([]string, calls)
		var wg sync.WaitGroup
		for i := range calls {
			order, trace := fmt.Sprintf("O%d", i), fmt.Sprintf("t%d", i)
			ctx, cancel := context.WithCancel(d.ctx)
			defer cancel()
			mu.Lock()
			mode[order], crash[order] = modes[i%len(modes)], cancel
			mu.Unlock()
			orders[i] = order
			d.ground(trace, order)
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := d.g.Call(ctx, Call{Tool: "issue_refund", Args: json.RawMessage(`{"order_id":"` + order + `","amount":10}`), Caller: "support", TraceID: trace})
				if err != nil && !errors.Is(err, context.Canceled) {
					t.Errorf("call %s: %v", order, err)
				}
				ids[i] = res.ActionID
			}()
		}
		wg.Wait()
		// Recovery after recovery, from three gates and every action's
		// Execute at once, each round past the lease.
		gates := []*Gate{d.g, d.gate(Config{Tools: d.tools, Contracts: d.contracts, Lease: lease}),
			d.gate(Config{Tools: d.tools, Contracts: d.contracts, Lease: lease})}
		for range 3 {
			d.clock.Advance(2 * lease)
			var wg sync.WaitGroup
			for _, g := range gates {
				wg.Go(func() {
					if _, err := g.Recover(d.ctx); err != nil {
						t.Errorf("Recover: %v", err)
					}
				})
			}
			for i, id := range ids {
				wg.Go(func() {
					if _, err := gates[i%len(gates)].Execute(d.ctx, id); err != nil {
						t.Errorf("Execute %s: %v", id, err)
					}
				})
			}
			wg.Wait()
		}
		for i, id := range ids {
			m := mode[orders[i]]
			if n := acted[id]; n != 1 {
				t.Errorf("%s (%s): the effect took place %d times, want once", orders[i], m, n)
			}
			res := d.execute(id)
			switch m {
			case "crash", "past_lease":
				wantOutcome(t, orders[i]+" "+m, res, audit.OutcomeFailed, reason.EffectUnknown)
				if f, ok := res.Failure(); !ok || f.Status() != failure.StatusUnknown || f.Retryable() {
					t.Errorf("%s: failure %+v %v, want FAILED_UNKNOWN, not retryable", orders[i], f, ok)
				}
				if res.Hint == "" {
					t.Errorf("%s: no hint", orders[i])
				}
			case "panic":
				// It may have acted before it panicked.
				wantOutcome(t, orders[i]+" "+m, res, audit.OutcomeFailed, reason.EffectUnknown)
			default:
				wantOutcome(t, orders[i]+" "+m, res, audit.OutcomeExecuted, reason.EffectSucceeded)
			}
		}
		if res, err := d.g.Recover(d.ctx); err != nil || len(res) != 0 {
			t.Errorf("Recover after all: %+v %v, want nothing left", res, err)
		}
	}, unkeyed, withLease(lease))
}

// TestRedriveNeedsAKey plays a crash after attempt 1 began, for each kind
// of tool: an effect with a once-key and an Idempotent one are started
// again with the same key once the lease is over; an unkeyed one, even a
// tool that rests on no belief, is recorded as EFFECT_UNKNOWN and started
// no more. Either
// outcome is recorded for good.
func TestRedriveNeedsAKey(t *testing.T) {
	for _, c := range []struct {
		name string
		mod  func(*setup)
		tool string
		want reason.Code
	}{
		{"unkeyed", unkeyed, "issue_refund", reason.EffectUnknown},
		{"idempotent", func(*setup) {}, "issue_refund", reason.EffectSucceeded},
		{"once-key", func(su *setup) {
			unkeyed(su)
			for i := range su.tools {
				if su.tools[i].Name == "issue_refund" {
					su.tools[i].Once = &kernel.OnceKey{Fields: []string{"order_id"}}
				}
			}
		}, "issue_refund", reason.EffectSucceeded},
		{"no belief", unkeyed, "lookup_order", reason.EffectUnknown},
	} {
		t.Run(c.name, func(t *testing.T) {
			onStores(t, func(t *testing.T, d *desk) {
				var id string
				if c.tool == "lookup_order" {
					res, j, err := d.g.x.propose(d.ctx, Call{Tool: "lookup_order", Args: json.RawMessage(`{"order_id":"A1"}`), Caller: "support", TraceID: "t", Intent: "refund"})
					if err != nil || j == nil {
						t.Fatalf("propose: %+v %v", res, err)
					}
					if _, err := d.g.x.startAttempt(d.ctx, j, 1, blackboard.Record{}, nil); err != nil {
						t.Fatal(err)
					}
					id = j.act.ID
				} else {
					d.ground("t", "A1")
					j := d.committed("t", "A1", 10)
					if _, err := d.g.x.startAttempt(d.ctx, j, 1, blackboard.Record{}, nil); err != nil {
						t.Fatal(err)
					}
					id = j.act.ID
				}
				before := len(d.invocations(c.tool))
				d.clock.Advance(2 * defaultLease)
				res, err := d.g.Recover(d.ctx)
				if err != nil || len(res) != 1 || res[0].ActionID != id {
					t.Fatalf("Recover: %+v %v", res, err)
				}
				ran := len(d.invocations(c.tool)) - before
				if c.want == reason.EffectUnknown {
					wantOutcome(t, "recovered", res[0], audit.OutcomeFailed, reason.EffectUnknown)
					if ran != 0 {
						t.Errorf("the effect was started %d more times, want none", ran)
					}
				} else {
					wantOutcome(t, "recovered", res[0], audit.OutcomeExecuted, reason.EffectSucceeded)
					if calls := d.invocations(c.tool); ran != 1 || calls[len(calls)-1].Attempt != 2 {
						t.Errorf("re-driven %d times (%+v), want attempt 2 once", ran, calls)
					}
				}
				// The outcome is recorded for good: neither Recover nor
				// Execute starts it again.
				d.clock.Advance(time.Hour)
				if res, err := d.g.Recover(d.ctx); err != nil || len(res) != 0 {
					t.Errorf("second Recover: %+v %v", res, err)
				}
				if again := d.execute(id); again.Code != c.want {
					t.Errorf("Execute after: %s, want %s", again.Code, c.want)
				}
			}, c.mod)
		})
	}
}

// countingReader counts the records read by id.
type countingReader struct {
	kernel.Handle
	gets atomic.Int64
}

func (r *countingReader) Get(ctx context.Context, id string) (blackboard.Record, error) {
	r.gets.Add(1)
	return r.Handle.Get(ctx, id)
}

// Recover remembers finished work through the store: an action whose
// result its scan of the decision records finds is not looked at again, so
// a restart over a long history reads no record by id for it; an
// unfinished one still is.
func TestRecoverSkipsFinished(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		for i := range 10 {
			trace := fmt.Sprintf("t%d", i)
			d.ground(trace, "A1")
			wantOutcome(t, trace, d.refund(trace, "A1", 10), audit.OutcomeExecuted, reason.EffectSucceeded)
		}
		d.clock.Advance(2 * defaultLease)
		cr := &countingReader{Handle: d.g.reader}
		d.g.reader, d.g.x.reader = cr, cr
		if res, err := d.g.Recover(d.ctx); err != nil || len(res) != 0 {
			t.Fatalf("Recover: %+v %v", res, err)
		}
		if n := cr.gets.Load(); n != 0 {
			t.Errorf("Recover read %d records by id for finished actions, want none", n)
		}
		d.ground("u", "A2")
		j := d.committed("u", "A2", 10)
		res, err := d.g.Recover(d.ctx)
		if err != nil || len(res) != 0 {
			t.Fatalf("Recover of a fresh action: %+v %v", res, err)
		}
		if cr.gets.Load() == 0 {
			t.Errorf("Recover read nothing about the unfinished action %s", j.act.ID)
		}
	})
}

// Pending passes over the actions that waited and have a result,
// found in its one scan of the decision records, reading nothing more
// about them: a supervisor that looks every second over a long history of
// approvals reads only what still waits.
func TestPendingApprovalsSkipsFinished(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		for i := range 6 {
			trace := fmt.Sprintf("t%d", i)
			d.ground(trace, "A1")
			res := d.refund(trace, "A1", 600)
			if i%2 == 0 {
				d.approve(trace, res.ActionID, "human:alice", time.Hour)
			} else if _, err := d.g.Approver("human:alice").Decide(d.ctx, audit.Approval{TraceID: trace, ActionID: res.ActionID, Digest: d.digest(res.ActionID), Decision: audit.Denied, Note: "no"}); err != nil {
				t.Fatal(err)
			}
			d.execute(res.ActionID)
		}
		cr := &countingReader{Handle: d.g.reader}
		d.g.reader, d.g.x.reader = cr, cr
		if p, err := d.g.Pending(d.ctx, ""); err != nil || len(p) != 0 {
			t.Fatalf("Pending: %+v %v", p, err)
		}
		if n := cr.gets.Load(); n != 0 {
			t.Errorf("Pending read %d records by id for finished actions, want none", n)
		}
		d.ground("u", "A1")
		res := d.refund("u", "A1", 600)
		if p, err := d.g.Pending(d.ctx, ""); err != nil || len(p) != 1 || p[0].ActionID != res.ActionID || p[0].TraceID != "u" {
			t.Errorf("Pending: %+v %v, want %s of u", p, err, res.ActionID)
		}
	})
}
