package toolgate

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
)

// The attacks of the second adversarial review on decision records,
// once-keys and approvals (docs/security.md, routes 3, 8 and 9). They use
// the gate's and the kernel's public API only.

// withOnceKey gives issue_refund a once-key on its order, so that a refund
// of an order has a key another action could try to take.
func withOnceKey(su *setup) {
	for i := range su.tools {
		if su.tools[i].Name == "issue_refund" {
			su.tools[i].Once = &kernel.OnceKey{Fields: []string{"order_id"}}
		}
	}
}

// A tool handle, of the gate's own tool or of any other, tries to claim
// the keys the gate and the kernel derive for a waiting refund: its
// effect's result and first attempt, and the refund's once-key. Every
// claim is refused and stores nothing, and the refund still runs once.
func TestAttackToolClaimsGateKeys(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		wait := d.pendingRefund("t", "A1", 700)
		act, err := d.store.Get(d.ctx, wait.ActionID)
		if err != nil {
			t.Fatal(err)
		}
		j, err := d.g.x.newJob(d.ctx, d.g.tools["issue_refund"], act, nil)
		if err != nil {
			t.Fatal(err)
		}
		once, err := d.k.Governor().OnceKeyOf(d.ctx, wait.ActionID)
		if err != nil {
			t.Fatal(err)
		}
		before := len(d.records())
		for _, h := range []kernel.Handle{d.k.Handle(blackboard.RoleTool, "tool:issue_refund"), d.k.Handle(blackboard.RoleTool, "mallory")} {
			for _, key := range []string{j.resultKey(), j.attemptKey(1), once} {
				_, err := h.Write(d.ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Percepts, Kind: "refund",
					Payload: blackboard.Payload{"refund_id": "re_forged"}, OnceKeys: []string{key}})
				if !errors.Is(err, blackboard.ErrPermission) {
					t.Errorf("tool %s claims %s: %v, want ErrPermission", h.Name(), key, err)
				}
			}
		}
		if n := len(d.records()); n != before {
			t.Fatalf("refused claims stored %d records", n-before)
		}
		d.approve("t", wait.ActionID, "human:alice", time.Hour)
		res := d.execute(wait.ActionID)
		wantOutcome(t, "the victim's refund", res, audit.OutcomeExecuted, reason.EffectSucceeded)
		if res.Output["refund_id"] != "re_A1" || len(d.invocations("issue_refund")) != 1 {
			t.Errorf("result %+v after %d effect calls, want the effect's own, once", res, len(d.invocations("issue_refund")))
		}
	}, withOnceKey)
}

// A planner, writing as the gate's own caller writer, submits a refund of
// 900,000: the kernel refuses it (the tool's action type is the gate's).
// Committed past the gate all the same (by the owner's Governor, as a bug
// would), an evidence handle writes the decision record the gate would
// write, claiming the gate committed a call of 501 waiting for approval.
// The record is the evidence handle's, not the kernel's: no forged record
// in Decisions, nothing for an approver, and Execute does not know the
// action.
func TestAttackPlannerForgesDecisionRecord(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		d.ground("t", "A1")
		forged := blackboard.Payload{"tool": "issue_refund", "caller": "support", "call_id": "call_forged", "approval_required": true,
			"approval_reason": "amount > 500", "args": map[string]any{"order_id": "A1", "amount": 501.0}}
		refund := kernel.Entry{TraceID: "t", Slot: blackboard.Actions, Kind: "issue_refund",
			Payload: blackboard.Payload{"order_id": "A1", "amount": 900000.0, "requires_beliefs": []string{"refund_due"}}}
		if _, err := d.k.Proposer(blackboard.RolePlanner, audit.CallerWriter("support")).Submit(d.ctx, refund); !errors.Is(err, blackboard.ErrPermission) {
			t.Errorf("a planner submits a tool's action: %v, want ErrPermission", err)
		}
		dec, err := d.k.Governor().Submit(d.ctx, audit.CallerWriter("support"), refund, nil)
		if err != nil {
			t.Fatal(err)
		}
		var committed blackboard.Record
		if dec.Committed() {
			if committed, err = d.k.Reader().Get(d.ctx, dec.CommittedID); err != nil {
				t.Fatal(err)
			}
		}
		dr := audit.ForDecision("t", "issue_refund", dec, committed)
		dr.Outcome, dr.Context = audit.OutcomePendingApproval, forged
		f, err := dr.Follow()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.k.Handle(blackboard.RoleEvidence, "ev").Write(d.ctx, f.Entry); err != nil {
			t.Fatal(err)
		}
		for _, r := range d.decisions(audit.Query{TraceID: "t", Tool: "issue_refund"}) {
			t.Errorf("Decisions lists %+v", r)
		}
		if dec.Committed() {
			if _, err := d.g.Execute(d.ctx, dec.CommittedID); !errors.Is(err, kernel.ErrInvalidReference) {
				t.Errorf("Execute of the planner's refund: %v, want kernel.ErrInvalidReference", err)
			}
		}
		pending, err := d.g.Pending(d.ctx, "t")
		if err != nil || len(pending) != 0 {
			t.Errorf("Pending: %+v %v, want nothing", pending, err)
		}
		// The gate's own writes still carry their records.
		d.ground("u", "A1")
		wait := d.refund("u", "A1", 700)
		if wait.Outcome != audit.OutcomePendingApproval || len(d.decisions(audit.Query{TraceID: "u", Tool: "issue_refund"})) != 1 {
			t.Errorf("the gate's call %+v, records %+v", wait, d.decisions(audit.Query{TraceID: "u", Tool: "issue_refund"}))
		}
	})
}

// Decision records that say a call waits for approval but are not the
// record the gate wrote when it committed the action (here written
// through the owner's Governor, as a bug or an old record would
// be): one about the order percept, one about a lookup, one naming the
// wrong tool and arguments for the real refund. The approver sees the one
// real pending refund, with its own tool and arguments.
func TestAttackApproverSeesTheCommittedAction(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		wait := d.pendingRefund("t", "A1", 700)
		lookup := d.call("t", "support", "refund", "lookup_order", `{"order_id":"A1"}`)
		order, err := d.k.Handle(blackboard.RoleTool, "reader").Find(d.ctx, "t", blackboard.Percepts, "order")
		if err != nil {
			t.Fatal(err)
		}
		odd := func(subject, tool, kind string) {
			t.Helper()
			_, err := audit.Append(d.ctx, d.k.Governor(), audit.Entry{TraceID: "t", Kind: kind, Subject: subject,
				Outcome: audit.OutcomePendingApproval, Code: reason.Committed,
				Context: blackboard.Payload{"tool": tool, "caller": "support", "approval_reason": "forged",
					"args": map[string]any{"order_id": "A1", "amount": 501.0}}})
			if err != nil {
				t.Fatal(err)
			}
		}
		odd(order.ID, "issue_refund", "issue_refund")
		odd(lookup.ActionID, "issue_refund", "issue_refund")
		odd(wait.ActionID, "lookup_order", "lookup_order")
		odd(wait.ActionID, "issue_refund", "issue_refund")
		pending, err := d.g.Pending(d.ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		if len(pending) != 1 {
			t.Fatalf("Pending lists %d: %+v, want the one refund", len(pending), pending)
		}
		p := pending[0]
		if p.ActionID != wait.ActionID || p.Tool != "issue_refund" || p.Args["amount"] != 700.0 || p.Digest != d.digest(wait.ActionID) ||
			p.Reason == "forged" {
			t.Errorf("the approver is shown %+v", p)
		}
	})
}

// An approval outlives its evidence: the refund is approved, then the
// order lookup it rests on expires, or a newer lookup supersedes it, or a
// constraint now blocks refunds. Execute decides again, refuses with the
// kernel's code, runs nothing and consumes no approval; the refusal is for
// good, so a later Execute (or Recover) answers the same.
func TestAttackApprovalOutlivesItsEvidence(t *testing.T) {
	cases := []struct {
		name   string
		change func(t *testing.T, d *desk)
		code   reason.Code
	}{
		{"lookup expires", func(t *testing.T, d *desk) { d.clock.Advance(20 * time.Minute) }, reason.StaleEvidence},
		{"newer lookup", func(t *testing.T, d *desk) {
			d.setEffect("lookup_order", func(_ context.Context, inv Invocation) (blackboard.Payload, error) {
				return blackboard.Payload{"order_id": inv.Args["order_id"], "amount": 900.0, "refundable": false}, nil
			})
			if res := d.call("t", "support", "refund", "lookup_order", `{"order_id":"A1"}`); res.Outcome != audit.OutcomeExecuted {
				t.Fatalf("second lookup: %+v", res)
			}
		}, reason.SupersededEvidence},
		{"constraint", func(t *testing.T, d *desk) {
			if _, err := d.k.Symbolic("policy").CommitConstraint(d.ctx, "t", kernel.Constraint{Name: "refunds_frozen", Enabled: true,
				BlocksField: "order_id", AppliesTo: []string{"issue_refund"}}, ""); err != nil {
				t.Fatal(err)
			}
		}, reason.Blocked("refunds_frozen")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			onStores(t, func(t *testing.T, d *desk) {
				wait := d.pendingRefund("t", "A1", 700)
				approval := d.approve("t", wait.ActionID, "human:alice", 2*time.Hour)
				c.change(t, d)
				for _, what := range []string{"execute", "execute again"} {
					res := d.execute(wait.ActionID)
					wantOutcome(t, what, res, audit.OutcomeRefused, c.code)
					if !strings.Contains(res.RootCause.Detail, string(c.code)) {
						t.Errorf("%s: root cause %+v does not name %s", what, res.RootCause, c.code)
					}
				}
				if n := len(d.invocations("issue_refund")); n != 0 {
					t.Errorf("the effect ran %d times on evidence that no longer holds", n)
				}
				for _, r := range d.kinds(blackboard.Percepts, audit.KindAttempt) {
					if effectOf(r).ActionID == wait.ActionID {
						t.Errorf("attempt %s started", r.ID)
					}
				}
				if holder, err := d.k.Governor().ClaimedBy(d.ctx, approvalKey(approval.ID)); !errors.Is(err, blackboard.ErrNotFound) {
					t.Errorf("the approval was consumed by %q (%v)", holder, err)
				}
				if res, err := d.g.Recover(d.ctx); err != nil || len(res) != 0 || len(d.invocations("issue_refund")) != 0 {
					t.Errorf("Recover drove %+v (%v)", res, err)
				}
			}, withResultTTL("lookup_order", 10*time.Minute))
		})
	}
}

// withResultTTL sets a tool's result TTL.
func withResultTTL(tool string, ttl time.Duration) func(*setup) {
	return func(su *setup) {
		for i := range su.tools {
			if su.tools[i].Name == tool {
				su.tools[i].ResultTTL = ttl
			}
		}
	}
}

// Two drivers of one approved refund: B finds no attempt and is deciding
// the evidence again when A starts attempt 1 and its effect; then B's
// recheck refuses (a rule now rejects the refund). B's refusal must not
// become the result of an effect that A is running: B yields to A's
// attempt, and both report the one execution.
func TestAttackRecheckRefusalBesideARunningAttempt(t *testing.T) {
	var (
		armed         atomic.Bool
		calls         atomic.Int32
		bWaiting      = make(chan struct{})
		releaseB      = make(chan struct{})
		effectStarted = make(chan struct{})
		releaseEffect = make(chan struct{})
	)
	rule := kernel.ValidatorFunc(func(ctx context.Context, c kernel.Candidate) kernel.Cause {
		if !armed.Load() || c.Proposal().Slot != blackboard.Actions {
			return kernel.Cause{}
		}
		if calls.Add(1) == 1 { // B's recheck
			close(bWaiting)
			<-releaseB
			return kernel.Cause{Code: "RULE_VIOLATED", Detail: "refunds paused"}
		}
		return kernel.Cause{} // A's
	})
	// The store tells when B's refusal was written (or refused): the
	// first batch after the effect started that claims a result key.
	refusalTried := make(chan struct{})
	var once sync.Once
	store := &applyHook{Store: memstore.New(), after: func(b store.Batch) {
		select {
		case <-effectStarted:
		default:
			return
		}
		for _, c := range b.Claims {
			if strings.HasSuffix(c.Key, "/result") {
				once.Do(func() { close(refusalTried) })
			}
		}
	}}
	d := newDesk(t, store, func(su *setup) { su.cfg.Kernel.Validators = append(su.cfg.Kernel.Validators, rule) })
	wait := d.pendingRefund("t", "A1", 700)
	d.approve("t", wait.ActionID, "human:alice", time.Hour)
	d.setEffect("issue_refund", func(ctx context.Context, inv Invocation) (blackboard.Payload, error) {
		close(effectStarted)
		<-releaseEffect
		return blackboard.Payload{"refund_id": "re_A1"}, nil
	})
	armed.Store(true)
	type out struct {
		res Result
		err error
	}
	run := func() <-chan out {
		ch := make(chan out, 1)
		go func() {
			res, err := d.g.Execute(d.ctx, wait.ActionID)
			ch <- out{res, err}
		}()
		return ch
	}
	// A step that never comes means the recheck did not run as this test
	// expects: fail rather than hang.
	step := func(ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s never happened", what)
		}
	}
	b := run()
	step(bWaiting, "B's recheck")
	a := run()
	step(effectStarted, "A's effect")
	close(releaseB)
	step(refusalTried, "B's refusal") // B's refusal met A's running attempt before A's result
	close(releaseEffect)
	for _, ch := range []<-chan out{a, b} {
		o := <-ch
		if o.err != nil || o.res.Outcome != audit.OutcomeExecuted {
			t.Errorf("driver: %+v %v, want the execution", o.res, o.err)
		}
	}
	if n := len(d.invocations("issue_refund")); n != 1 {
		t.Errorf("the effect ran %d times", n)
	}
}

// applyHook is a store that calls after with every batch it applied or
// refused. It embeds the Store interface only, so the kernel writes
// through Apply.
type applyHook struct {
	store.Store
	after func(store.Batch)
}

func (h *applyHook) Apply(ctx context.Context, b store.Batch) error {
	err := h.Store.Apply(ctx, b)
	h.after(b)
	return err
}

// decisionBarrier is a store that holds every batch appending an approval
// until n of them have arrived (or a second passed), so that n decisions
// made at once are all past the gate's checks before any is written: the
// race of two consoles, or bk approve and a console, over one store.
type decisionBarrier struct {
	store.Store
	n       int
	mu      sync.Mutex
	arrived int
	all     chan struct{}
}

func (s *decisionBarrier) Apply(ctx context.Context, b store.Batch) error {
	if len(b.Appends) > 0 && b.Appends[0].Kind == audit.KindApproval {
		s.mu.Lock()
		s.arrived++
		if s.arrived == s.n {
			close(s.all)
		}
		s.mu.Unlock()
		select {
		case <-s.all:
		case <-time.After(time.Second):
		}
	}
	return s.Store.Apply(ctx, b)
}

// TestAttackConcurrentDecisions: six approvers, each through a gate of
// its own over one store as six consoles or processes would, approve or
// deny one waiting refund at the same moment. Exactly one decision is
// recorded; every other is refused with ErrDecided naming it; the
// application's gate acts on that one decision.
func TestAttackConcurrentDecisions(t *testing.T) {
	const n = 6
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			s := st.open(t)
			t.Cleanup(func() { s.Close() })
			barrier := &decisionBarrier{Store: s, n: n, all: make(chan struct{})}
			d := newDesk(t, barrier)
			wait := d.pendingRefund("t", "A1", 700)
			digest := d.digest(wait.ActionID)
			errs := make([]error, n)
			recs := make([]blackboard.Record, n)
			var wg sync.WaitGroup
			for i := range n {
				ap := d.gate(Config{}).Approver("human:" + string(rune('a'+i)))
				v := audit.Approved
				if i%2 == 1 {
					v = audit.Denied
				}
				wg.Go(func() {
					recs[i], errs[i] = ap.Decide(d.ctx, audit.Approval{TraceID: "t", ActionID: wait.ActionID, Digest: digest, Decision: v})
				})
			}
			wg.Wait()
			var won []blackboard.Record
			for i, err := range errs {
				if err == nil {
					won = append(won, recs[i])
				}
			}
			if len(won) != 1 || d.approvalsOf("t", wait.ActionID) != 1 {
				t.Fatalf("%d decisions won, %d recorded, want 1: %v", len(won), d.approvalsOf("t", wait.ActionID), errs)
			}
			for _, err := range errs {
				var de *decidedError
				if err != nil && (!errors.As(err, &de) || de.Why != settledConcurrent || de.Record != won[0].ID) {
					t.Errorf("a losing decision: %v, want ErrDecided naming %s", err, won[0].ID)
				}
			}
			res := d.execute(wait.ActionID)
			if a, _ := audit.ApprovalOf(won[0]); a.Decision == audit.Approved {
				wantOutcome(t, "execute on the approval", res, audit.OutcomeExecuted, reason.EffectSucceeded)
			} else {
				wantOutcome(t, "execute on the denial", res, audit.OutcomeRefused, reason.ApprovalDenied)
			}
			if runs := len(d.invocations("issue_refund")); runs > 1 {
				t.Errorf("the refund ran %d times", runs)
			}
		})
	}
}
