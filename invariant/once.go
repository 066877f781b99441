package invariant

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/canon"
)

// maxSlots bounds the slots of one once-key family walked: far beyond any
// limit a tool declares, and a bound on a damaged store.
const maxSlots = 100_000

// holder is a record found holding a once-key: its id, the key, the
// tool and action type the key is of, and the trace of the action whose
// values name it.
type holder struct {
	id, key, tool, action, trace string
}

// onceKeys finds the once-keys of every committed action of t whose tool
// declares one: the key family of its values (from its arguments, or
// from each observation of the key's percept before it), walked slot by
// slot in the store's claims. The holders are judged once every trace
// has been read ([checker.judgeHolders]). It also notes which actions the
// gate decided and which it closed before any attempt.
func (c *checker) onceKeys(t *trace) error {
	for id := range t.decided {
		c.decided[id] = true
	}
	for i := range t.recs {
		r := &t.recs[i]
		if e, ok := audit.EffectOf(*r); ok && !ran(e) {
			c.closed[e.ActionID] = true
		}
	}
	return c.heldKeys(t)
}

// heldKeys finds the holders of t's once-keys (see [checker.onceKeys]).
// The mutation switch mutOnceHolder finds none.
func (c *checker) heldKeys(t *trace) error {
	if mutOnceHolder {
		return nil
	}
	return c.keyHolders(t)
}

func (c *checker) keyHolders(t *trace) error {
	for i := range t.recs {
		act := &t.recs[i]
		if !isCommittedAction(act) {
			continue
		}
		ns := cmp.Or(act.Namespace, blackboard.DefaultNamespace)
		tp := c.policy(ns).actions[act.Kind]
		if tp == nil || tp.Once == nil {
			continue
		}
		sources := []blackboard.Payload{act.Payload}
		if tp.Once.Percept != "" {
			sources = sources[:0]
			for j := i - 1; j >= 0; j-- {
				if r := &t.recs[j]; r.Slot == blackboard.Percepts && r.Mode == blackboard.ModeCommit && r.Kind == tp.Once.Percept {
					sources = append(sources, r.Payload)
				}
			}
		}
		for _, src := range sources {
			prefix, ok := keyPrefix(ns, act.Kind, tp.Once.Fields, src)
			if !ok || c.families[ns+"\x00"+prefix] {
				continue
			}
			c.families[ns+"\x00"+prefix] = true
			if err := c.walk(t, act, ns, tp.Name, prefix); err != nil {
				return err
			}
		}
	}
	return nil
}

// keyPrefix is the once-key of an action type and the values of fields
// in src, without its slot: the canonical JSON array [namespace, type,
// values...] open at its end. ok is false when a field is missing.
func keyPrefix(ns, actionType string, fields []string, src blackboard.Payload) (string, bool) {
	values := []any{ns, actionType}
	for _, f := range fields {
		v, ok := src[f]
		if !ok || v == nil {
			return "", false
		}
		values = append(values, v)
	}
	b, err := canon.Encode(values)
	if err != nil {
		return "", false
	}
	return string(b[:len(b)-1]) + ",", true
}

// walk reads the claimed slots of one key family, in order, up to the
// first free one, and notes each holder.
func (c *checker) walk(t *trace, act *blackboard.Record, ns, tool, prefix string) error {
	for n := 1; n <= maxSlots; n++ {
		key := prefix + strconv.Itoa(n) + "]"
		id, err := c.st.ClaimedBy(c.ctx, ns, key)
		if errors.Is(err, blackboard.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		c.holders = append(c.holders, holder{id: id, key: key, tool: tool, action: act.Kind, trace: t.id})
	}
	return nil
}

// judgeHolders checks every once-key holder found: a committed action of
// the key's type that the gate decided, and that ran or may still run
// (active and not closed before an attempt); a retired holder must not
// have run, since its slot is given to the next action ([onceHolder]).
func (c *checker) judgeHolders() error {
	for _, h := range c.holders {
		id := h.id
		bad := func(format string, args ...any) {
			c.report(onceHolder, h.trace, id, "once-key "+h.key+" of "+h.tool+": "+fmt.Sprintf(format, args...))
		}
		rec, err := c.st.Get(c.ctx, id)
		if errors.Is(err, blackboard.ErrNotFound) {
			bad("held by %s, which does not exist", id)
			continue
		}
		if err != nil {
			return err
		}
		switch {
		case !isCommittedAction(&rec) || rec.Kind != h.action:
			bad("held by %s (%s %s %s), not a committed %s action", id, rec.Slot, rec.Mode, rec.Kind, h.action)
		case !c.decided[id]:
			bad("held by %s, an action the gate did not decide", id)
		case rec.Status == blackboard.StatusActive && c.closed[id] && !c.ran[id]:
			bad("held by %s, which the gate closed before any attempt and which can never run", id)
		case rec.Status != blackboard.StatusActive && c.ran[id]:
			bad("held by %s, which ran and was %s: its slot is free for another", id, rec.Status)
		}
	}
	return nil
}
