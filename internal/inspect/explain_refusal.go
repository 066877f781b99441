package inspect

import (
	"slices"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// causes is the causal chain of a refused proposal, outermost first: its
// decision record's when there is one, else read back from the trace.
func (x *explainer) causes(p *blackboard.Record) []kernel.Cause {
	if d, ok := x.decisionAbout(p); ok {
		return append([]kernel.Cause{{Code: d.Code, Record: d.Failed, Rule: d.Rule, Detail: d.Detail}}, d.Causes...)
	}
	out := []kernel.Cause{{Code: p.Reason}}
	failed, below := x.failedOf(p)
	if failed != nil {
		out[0].Record = failed.ID
		if below {
			out = append(out, x.causes(failed)...)
		}
	}
	return out
}

// failedOf finds the record a refusal is about, as far as the trace
// shows: the flagged percept behind an evidence code (below false), the
// rejected belief behind a missing one (below true: it has causes of its
// own), the false belief behind an unsatisfied one.
func (x *explainer) failedOf(p *blackboard.Record) (failed *blackboard.Record, below bool) {
	at := x.pos[p.ID]
	switch p.Reason {
	case reason.StaleEvidence, reason.UnresolvedConflict, reason.LowConfidence, reason.SupersededEvidence, reason.MissingEvidence:
		percepts := x.dependencies(p, at)
		for _, r := range percepts {
			if perceptFails(r, p) == p.Reason {
				return r, false
			}
		}
		if len(percepts) > 0 && p.Slot == blackboard.Beliefs {
			return percepts[0], false
		}
	case reason.PlanMissingBelief, reason.NoCommittedBelief:
		for _, kind := range requiredBeliefs(p) {
			if x.latest(blackboard.Beliefs, kind, at, true) != nil {
				continue
			}
			if b := x.latest(blackboard.Beliefs, kind, at, false); b != nil && b.Mode == blackboard.ModePropose && b.Status == blackboard.StatusInvalidated {
				return b, true
			}
		}
	case reason.NegativePrediction:
		for i := at - 1; i >= 0; i-- {
			r := &x.recs[i]
			if r.Slot == blackboard.Predictions && r.Mode == blackboard.ModeCommit && r.Payload["action_type"] == any(p.Kind) {
				if v, ok := r.Payload.Float("expected_outcome"); ok && v < 0 {
					return r, false
				}
			}
		}
	case reason.PlanBeliefNotSatisfied, reason.BeliefNotSatisfied:
		for _, kind := range requiredBeliefs(p) {
			if b := x.latest(blackboard.Beliefs, kind, at, true); b != nil && !b.Payload.Bool("value") {
				return b, false
			}
		}
	}
	return nil, false
}

// perceptFails says which evidence code a percept fails, as its record
// shows (flags, TTL at the proposal's time), or "".
func perceptFails(r, p *blackboard.Record) reason.Code {
	switch {
	case r.Payload.Bool("stale") || expiresBy(r, p.Provenance.TimestampMS) || r.Status == blackboard.StatusExpired:
		return reason.StaleEvidence
	case r.Payload.Bool("conflict"):
		return reason.UnresolvedConflict
	case r.Payload.Bool("low_confidence"):
		return reason.LowConfidence
	}
	return ""
}

// dependencies are the percepts a belief proposal named, as they were
// when it was proposed (a kind means its latest observation before).
func (x *explainer) dependencies(p *blackboard.Record, at int) []*blackboard.Record {
	var out []*blackboard.Record
	for _, d := range list(p.Payload, "depends_on") {
		s, _ := d.(string)
		if r := x.byID[s]; r != nil && r.Slot == blackboard.Percepts {
			out = append(out, r)
		} else if r := x.latest(blackboard.Percepts, s, at, false); r != nil {
			out = append(out, r)
		}
	}
	return out
}

// latest returns the latest record of kind in slot before position at
// (committed only, if asked).
func (x *explainer) latest(slot blackboard.Slot, kind string, at int, committed bool) *blackboard.Record {
	for i := at - 1; i >= 0; i-- {
		r := &x.recs[i]
		if r.Slot == slot && r.Kind == kind && (!committed || r.Mode == blackboard.ModeCommit) {
			return r
		}
	}
	return nil
}

// requiredBeliefs lists the belief kinds a plan's steps or an action
// require.
func requiredBeliefs(p *blackboard.Record) []string {
	var out []string
	add := func(v any) {
		list, _ := v.([]any)
		for _, k := range list {
			if s, ok := k.(string); ok && !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	if p.Slot == blackboard.Plans {
		for _, st := range list(p.Payload, "steps") {
			if m, ok := st.(map[string]any); ok {
				add(m["requires_beliefs"])
			}
		}
		return out
	}
	add(p.Payload["requires_beliefs"])
	return out
}

// refusalChildren adds to a refused proposal the record its refusal is
// about, explained in turn.
func (x *explainer) refusalChildren(n *ExplainNode, p *blackboard.Record, depth int) {
	var failedID string
	if d, ok := x.decisionAbout(p); ok {
		failedID = d.Failed
	} else if f, _ := x.failedOf(p); f != nil {
		failedID = f.ID
	}
	if p.Slot == blackboard.Beliefs {
		for _, r := range x.dependencies(p, x.pos[p.ID]) {
			if x.seen[r.ID] {
				continue
			}
			c := x.node(r, "evidence", depth+1)
			c.Failed = r.ID == failedID
			n.Children = append(n.Children, c)
		}
		return
	}
	if f := x.byID[failedID]; f != nil && !x.seen[failedID] {
		c := x.node(f, "failed", depth+1)
		c.Failed = true
		n.Children = append(n.Children, c)
	}
}
