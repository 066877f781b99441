package invariant

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/ledger"
	"github.com/blackboardkernel/bk/internal/snapshot"
	"github.com/blackboardkernel/bk/store"
)

// The invariants (see the package documentation), as a [Violation]
// names them.
const (
	effectAction    = "effect_action"
	effectGrounding = "effect_grounding"
	onceHolder      = "once_holder"
	approvalBinding = "approval_binding"
	maskedValue     = "masked_value"
	derivedSource   = "derived_source"
	scopeHeld       = "scope_held"
	chainIntact     = "chain_intact"
)

// Violation is one breach of an invariant: the record that shows it, its
// trace, and what is wrong.
type Violation struct {
	// Invariant names the invariant broken: effect_action,
	// effect_grounding, once_holder, approval_binding, masked_value,
	// derived_source, scope_held or chain_intact (see the package
	// documentation).
	Invariant string
	TraceID   string
	RecordID  string
	Detail    string
}

// String renders the violation on one line.
func (v Violation) String() string {
	return fmt.Sprintf("%s: %s (trace %q, record %s)", v.Invariant, v.Detail, v.TraceID, v.RecordID)
}

// Check reads every trace of st and returns the violations of the
// invariants, in the order of the traces and of their records. The error
// is the store's or the context's; a store that holds no governed call
// has no violations. Check only reads.
func Check(ctx context.Context, st store.Store) ([]Violation, error) {
	c := &checker{ctx: ctx, st: st, policies: map[string]*nsPolicy{}, byHash: map[string]*hashPolicy{}, families: map[string]bool{},
		approvalUse: map[string]string{}, decided: map[string]bool{}, closed: map[string]bool{}, ran: map[string]bool{}}
	if err := c.chains(); err != nil {
		return nil, err
	}
	var traces []store.TraceSummary
	for ts, err := range store.ListTraces(ctx, st, "") {
		if err != nil {
			return nil, err
		}
		if ts.TraceID == ledger.Trace {
			continue // checkpoints: the chain check read them
		}
		if audit.IsPolicyTrace(ts.TraceID) {
			if err := c.readPolicies(ts.Namespace, ts.TraceID); err != nil {
				return nil, err
			}
			continue
		}
		traces = append(traces, ts)
	}
	for _, ts := range traces {
		t, err := c.readTrace(ts.Namespace, ts.TraceID)
		if err != nil {
			return nil, err
		}
		for _, check := range checks {
			if err := check(c, t); err != nil {
				return nil, err
			}
		}
	}
	if err := c.judgeHolders(); err != nil {
		return nil, err
	}
	return c.out, ctx.Err()
}

// chains reports every break of the store's history (package chain):
// a trace whose chain does not hold, a checkpoint out of sequence, a
// trace a checkpoint names that is gone. A store that keeps no chain has
// nothing to check here. Signatures need keys, which Check is not
// given: `bk verify --key` checks them.
func (c *checker) chains() error {
	cs, ok := c.st.(store.Chainer)
	if !ok {
		return nil
	}
	rep, err := ledger.Verify(c.ctx, cs, nil)
	if err != nil {
		return err
	}
	for _, b := range rep.Broken {
		c.report(chainIntact, b.Trace, b.RecordID, string(b.Fault)+": "+b.Detail)
	}
	for _, t := range rep.Traces {
		if b := t.Break; b != nil {
			c.report(chainIntact, b.Trace, b.RecordID, string(b.Fault)+": "+b.Detail)
		}
	}
	return nil
}

// checks run on each trace, in this order.
var checks = []func(*checker, *trace) error{
	(*checker).effects,
	(*checker).onceKeys,
	(*checker).derived,
	(*checker).masked,
	(*checker).scope,
}

// checker holds what a Check has read that outlives one trace.
type checker struct {
	ctx      context.Context
	st       store.Store
	out      []Violation
	policies map[string]*nsPolicy // by namespace
	byHash   map[string]*hashPolicy
	// families are the once-key families already walked (namespace and
	// key prefix); holders the holders found, judged when every trace
	// has been read.
	families map[string]bool
	holders  []holder
	// decided, closed and ran note, across traces, the committed actions
	// the gate decided, those it closed before any attempt (a refusal for
	// good, an escalation) and those with an effect recorded as run.
	decided, closed, ran map[string]bool
	// approvalUse maps an approval record to the action it let run.
	approvalUse map[string]string
}

// report adds a violation.
func (c *checker) report(n string, traceID, recordID, detail string) {
	c.out = append(c.out, Violation{Invariant: n, TraceID: traceID, RecordID: recordID, Detail: detail})
}

// nsPolicy is what the policy snapshots of one namespace declare, every
// version of it at once: a tool named by any of them is the gate's.
type nsPolicy struct {
	tools   map[string]*snapshot.Tool // by tool name
	actions map[string]*snapshot.Tool // by action type
	// masked are the fields each tool masks, by tool name, in every
	// snapshot that names it.
	masked map[string]map[string]bool
	// derivers names, by belief kind, the tools that derive it.
	derivers map[string]map[string]bool
}

// readPolicies reads the policy snapshots of a policy trace. A record
// that is not a policy the kernel wrote, or does not check out, declares
// nothing.
func (c *checker) readPolicies(namespace, traceID string) error {
	for r, err := range c.st.ListTrace(c.ctx, namespace, traceID) {
		if err != nil {
			return err
		}
		if r.Kind != audit.KindPolicy {
			continue
		}
		ap, err := audit.PolicyOf(r)
		if err != nil {
			continue
		}
		p, err := snapshot.Decode(ap)
		if err != nil {
			continue
		}
		h := ap.Hash
		c.notePolicy(h, &p)
		ns := cmp.Or(r.Namespace, blackboard.DefaultNamespace)
		np := c.policies[ns]
		if np == nil {
			np = &nsPolicy{tools: map[string]*snapshot.Tool{}, actions: map[string]*snapshot.Tool{},
				masked: map[string]map[string]bool{}, derivers: map[string]map[string]bool{}}
			c.policies[ns] = np
		}
		for i := range p.Tools {
			tp := &p.Tools[i]
			np.tools[tp.Name], np.actions[tp.Action] = tp, tp
			for _, f := range tp.Masked {
				if np.masked[tp.Name] == nil {
					np.masked[tp.Name] = map[string]bool{}
				}
				np.masked[tp.Name][f] = true
			}
			for _, d := range tp.Derives {
				if np.derivers[d.Belief] == nil {
					np.derivers[d.Belief] = map[string]bool{}
				}
				np.derivers[d.Belief][tp.Name] = true
			}
		}
	}
	return nil
}

// policy returns the policies of a record's namespace (empty when none
// is recorded).
func (c *checker) policy(ns string) *nsPolicy {
	if p := c.policies[cmp.Or(ns, blackboard.DefaultNamespace)]; p != nil {
		return p
	}
	return &nsPolicy{}
}

// trace is one trace's records in append order, indexed.
type trace struct {
	id   string
	recs []blackboard.Record
	pos  map[string]int // record id -> index in recs
	// commits lists, by slot and kind, the indexes of the trace's
	// committed records, in order.
	commits map[slotKind][]int
	// decided maps a committed action to the gate's decision record about
	// it (committed or pending approval).
	decided map[string]audit.Entry
}

type slotKind struct {
	slot blackboard.Slot
	kind string
}

// readTrace reads and indexes one trace.
func (c *checker) readTrace(namespace, id string) (*trace, error) {
	t := &trace{id: id, pos: map[string]int{}, commits: map[slotKind][]int{}, decided: map[string]audit.Entry{}}
	for r, err := range c.st.ListTrace(c.ctx, namespace, id) {
		if err != nil {
			return nil, err
		}
		i := len(t.recs)
		t.recs = append(t.recs, r)
		t.pos[r.ID] = i
		if r.Mode == blackboard.ModeCommit {
			sk := slotKind{r.Slot, r.Kind}
			t.commits[sk] = append(t.commits[sk], i)
		}
		if d, ok := audit.Of(r); ok && (d.Outcome == audit.OutcomeCommitted || d.Outcome == audit.OutcomePendingApproval) && d.Subject != "" {
			if _, seen := t.decided[d.Subject]; !seen {
				t.decided[d.Subject] = d
			}
		}
	}
	return t, c.ctx.Err()
}

// record returns the record id names and its index in t, -1 when it is
// in another trace; ok is false when the store holds no such record.
func (c *checker) record(t *trace, id string) (blackboard.Record, int, bool, error) {
	if i, ok := t.pos[id]; ok {
		return t.recs[i], i, true, nil
	}
	r, err := c.st.Get(c.ctx, id)
	if errors.Is(err, blackboard.ErrNotFound) {
		return blackboard.Record{}, -1, false, nil
	}
	if err != nil {
		return blackboard.Record{}, -1, false, err
	}
	return r, -1, true, nil
}

// laterCommit returns the first committed record of slot and kind
// appended to t after index from and before index before, or "".
func (t *trace) laterCommit(slot blackboard.Slot, kind string, from, before int) string {
	idx := t.commits[slotKind{slot, kind}]
	n := sort.SearchInts(idx, from+1)
	if n < len(idx) && idx[n] < before {
		return t.recs[idx[n]].ID
	}
	return ""
}

// isCommittedAction reports whether r is an action the kernel committed.
func isCommittedAction(r *blackboard.Record) bool {
	return r.Slot == blackboard.Actions && r.Mode == blackboard.ModeCommit && r.Provenance.Role == blackboard.RoleKernel
}
