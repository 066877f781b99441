package invariant

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
)

// ran reports whether an effect record says the effect was run (or may
// have been): an attempt, or a result after one. A refusal for good and
// an escalation are written before any attempt.
func ran(e audit.Effect) bool {
	switch e.Status {
	case audit.StatusAttempted, audit.StatusSucceeded, audit.StatusFailed:
		return true
	}
	return e.Attempt > 0
}

// effects checks every effect the gate recorded as run in t: the action
// it is for ([effectAction]), that action's grounding at its commit
// ([effectGrounding]) and the approval it ran under ([approvalBinding]).
func (c *checker) effects(t *trace) error {
	grounded := map[string]bool{} // actions whose grounding was checked
	approved := map[[2]string]bool{}
	for i := range t.recs {
		r := &t.recs[i]
		e, ok := audit.EffectOf(*r)
		if !ok || !ran(e) {
			continue
		}
		act, at, ok, err := c.effectAction(t, r, i, e)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		c.ran[act.ID] = true
		if err := c.approvals(t, r, i, e, &act, approved); err != nil {
			return err
		}
		if grounded[act.ID] {
			continue
		}
		grounded[act.ID] = true
		if err := c.grounding(t, &act, at); err != nil {
			return err
		}
	}
	// Every other action the kernel committed, which an effect outside
	// the gate may carry out, was grounded alike.
	for i := range t.recs {
		if act := &t.recs[i]; isCommittedAction(act) && !grounded[act.ID] {
			if err := c.grounding(t, act, i); err != nil {
				return err
			}
		}
	}
	return nil
}

// effectAction checks that the effect record r (at index i of t) is for a
// committed action of its tool's action type, in t before r, that the
// gate decided. ok is false when it is not (reported).
func (c *checker) effectAction(t *trace, r *blackboard.Record, i int, e audit.Effect) (blackboard.Record, int, bool, error) {
	if mutEffectAction {
		return c.actionOf(t, e)
	}
	return c.effectActionHeld(t, r, i, e)
}

// actionOf is the committed action of t the effect e names, unchecked;
// ok is false when e names none.
func (c *checker) actionOf(t *trace, e audit.Effect) (act blackboard.Record, at int, ok bool, err error) {
	act, at, found, err := c.record(t, e.ActionID)
	return act, at, found && at >= 0 && isCommittedAction(&act), err
}

// effectActionHeld is effectAction's check: the mutation switch
// mutEffectAction skips it.
func (c *checker) effectActionHeld(t *trace, r *blackboard.Record, i int, e audit.Effect) (blackboard.Record, int, bool, error) {
	act, at, found, err := c.record(t, e.ActionID)
	if err != nil {
		return act, at, found && at >= 0 && isCommittedAction(&act), err
	}
	bad := func(format string, args ...any) (blackboard.Record, int, bool, error) {
		c.report(effectAction, t.id, r.ID, "effect of "+e.Tool+" for "+e.ActionID+": "+fmt.Sprintf(format, args...))
		return blackboard.Record{}, -1, false, nil
	}
	switch {
	case !found:
		return bad("no such record")
	case at < 0:
		return bad("the action is in trace %q", act.Provenance.TraceID)
	case !isCommittedAction(&act):
		return bad("not an action the kernel committed (%s, %s, %s)", act.Slot, act.Mode, act.Provenance.Role)
	case at > i:
		return bad("the action was committed after the effect")
	}
	tp := c.policy(r.Namespace).tools[e.Tool]
	if tp == nil {
		return bad("no recorded policy of namespace %q has the tool", cmp.Or(r.Namespace, blackboard.DefaultNamespace))
	}
	if act.Kind != tp.Action {
		return bad("the action is of type %q, the tool's is %q", act.Kind, tp.Action)
	}
	if _, ok := t.decided[act.ID]; !ok {
		return bad("the gate decided no such action (no decision record commits it)")
	}
	return act, at, true, nil
}

// grounding checks that the committed action act (at index at of t)
// rests on a committed belief of each kind it requires, and that those
// beliefs, and the observations their validation artifacts and its own
// checked, were each the current one of its slot and kind when act
// committed ([effectGrounding]).
func (c *checker) grounding(t *trace, act *blackboard.Record, at int) error {
	if mutEffectGrounding {
		return nil
	}
	return c.groundingHeld(t, act, at)
}

// groundingHeld is grounding's check: the mutation switch
// mutEffectGrounding skips it.
func (c *checker) groundingHeld(t *trace, act *blackboard.Record, at int) error {
	bad := func(format string, args ...any) {
		c.report(effectGrounding, t.id, act.ID, "action "+act.ID+" ("+act.Kind+"): "+fmt.Sprintf(format, args...))
	}
	// current checks one record of the grounding.
	current := func(id, what string) (blackboard.Record, bool, error) {
		r, i, found, err := c.record(t, id)
		switch {
		case err != nil:
			return r, false, err
		case !found:
			bad("its %s %s does not exist", what, id)
		case i < 0:
			bad("its %s %s is in trace %q", what, id, r.Provenance.TraceID)
		case i > at:
			bad("its %s %s was appended after it", what, id)
		case r.Mode != blackboard.ModeCommit:
			bad("its %s %s is not committed", what, id)
		default:
			if later := t.laterCommit(r.Slot, r.Kind, i, at); later != "" {
				bad("its %s %s (%s) was superseded by %s before the commit", what, id, r.Kind, later)
				return r, false, nil
			}
			return r, true, nil
		}
		return r, false, nil
	}
	artifacts := append([]string(nil), act.EvidenceRefs...)
	// The committed beliefs among its input refs of the kinds it requires
	// are what the kernel rested it on; the others are what the proposer
	// cited.
	required := map[string]bool{}
	for _, k := range stringList(act.Payload["requires_beliefs"]) {
		required[k] = false
	}
	for _, id := range act.Provenance.InputRefs[min(1, len(act.Provenance.InputRefs)):] {
		b, i, found, err := c.record(t, id)
		if err != nil {
			return err
		}
		if _, req := required[b.Kind]; !found || b.Slot != blackboard.Beliefs || b.Mode != blackboard.ModeCommit || !req || i < 0 {
			continue
		}
		required[b.Kind] = true
		if _, ok, err := current(id, "belief"); err != nil {
			return err
		} else if ok {
			artifacts = append(artifacts, b.EvidenceRefs...)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(required)) {
		if !required[k] {
			bad("no committed %s belief of its trace among its input refs, which it requires", k)
		}
	}
	seen := map[string]bool{}
	for _, id := range artifacts {
		if seen[id] {
			continue
		}
		seen[id] = true
		ev, _, found, err := c.record(t, id)
		if err != nil {
			return err
		}
		if !found {
			bad("its evidence %s does not exist", id)
			continue
		}
		for _, pid := range ev.Provenance.InputRefs {
			if seen[pid] {
				continue
			}
			seen[pid] = true
			if _, _, err := current(pid, "observation"); err != nil {
				return err
			}
		}
	}
	return nil
}

// stringList reads a payload list of strings, as a store returns it.
func stringList(v any) []string {
	var out []string
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
	case []string:
		out = x
	}
	return out
}
