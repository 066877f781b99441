package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/canon"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// claimedBy is [Governor.ClaimedBy].
func (k *Kernel) claimedBy(ctx context.Context, key string) (string, error) {
	if err := checkName("once-key", key); err != nil {
		return "", newErr("claimed by", "", reason.InvalidInput, blackboard.ErrInvalidInput, err.Error())
	}
	return k.store.ClaimedBy(ctx, k.keySpace(), key)
}

// ClaimedBy returns the id of the record whose write claimed the once-key
// key in the kernel's namespace (an action's commit, or a tool write's
// [Entry.OnceKeys]), or an error wrapping [blackboard.ErrNotFound] when the key is
// free there. Another namespace's claims are never seen: each namespace is
// a key space of its own. Governance code built on the kernel (an
// executor asking whether an effect already has a recorded result) uses
// it; it never writes. Safe for concurrent use.
func (g *Governor) ClaimedBy(ctx context.Context, key string) (string, error) {
	return g.k.claimedBy(ctx, key)
}

// keySpace is the namespace the kernel claims and looks up once-keys in.
func (k *Kernel) keySpace() string {
	if mutOnceNamespace {
		return "" // every namespace's keys in one space
	}
	return k.namespace
}

// onceSlots are the once-keys of one action type and key values, one per
// slot: the canonical JSON array [namespace, action type, values..., slot].
// Each component is a JSON value of its own, so no choice of namespace,
// type or values can spell another's key (namespace "acme" with type
// "eu/refund" is not namespace "acme/eu" with type "refund"), and the
// values are compared by their canonical form (0 and -0, 2 and 2.0 are one
// value), the same on every store.
type onceSlots struct {
	prefix, suffix string
	enc            string // the key's components, for a refusal's detail
	// legacy is the prefix of the keys releases before the canonical
	// array claimed ("once/<namespace>/<type>/<values as encoding/json
	// wrote them>/<slot>"), "" when the values have no such key. A store
	// written by such a release still holds them, so they are read (never
	// claimed) to keep every earlier claim in force.
	legacy string
}

// key returns the once-key of slot n (from 1).
func (o onceSlots) key(n int) string { return o.prefix + strconv.Itoa(n) + o.suffix }

// onceSlots builds the once-keys of actionType from src. missing names a
// key field src lacks.
func (k *Kernel) onceSlots(actionType string, o *OnceKey, src blackboard.Payload) (slots onceSlots, missing string, err error) {
	values := make([]any, 2, 2+len(o.Fields))
	values[0], values[1] = k.namespace, actionType
	for _, f := range o.Fields {
		v, ok := src[f]
		if !ok || v == nil {
			return onceSlots{}, f, nil
		}
		values = append(values, v)
	}
	var b []byte
	if mutOnceCanon {
		b, err = json.Marshal(values) // -0 and 0 spelled apart
	} else {
		b, err = canon.Encode(values)
	}
	if err != nil {
		return onceSlots{}, "", err
	}
	var legacy string
	if old, err := json.Marshal(values[2:]); err == nil {
		legacy = "once/" + k.namespace + "/" + actionType + "/" + string(old) + "/"
	}
	if mutOnceEncoding {
		// Components joined by a separator they may contain.
		vals, _ := canon.Encode(values[2:])
		return onceSlots{prefix: "once/" + k.namespace + "/" + actionType + "/" + string(vals) + "/", enc: string(vals)}, "", nil
	}
	// b is "[ns,type,v...]": the slot goes in as the last element.
	return onceSlots{prefix: string(b[:len(b)-1]) + ",", suffix: "]", enc: string(b), legacy: legacy}, "", nil
}

// maxRetiredSlots bounds how many slots held by retired actions a once-key
// lookup walks past; beyond it the key counts as used up (fail closed).
const maxRetiredSlots = 1000

// freeSlot finds the slot of slots a new commit claims, under limit: the
// first unclaimed slot, when fewer than limit of the slots before it are
// held by actions that may still run or have run. Slots are claimed in
// order, so the claimed ones are a prefix and the walk ends at the first
// free one. A slot held by a retired action ([Governor.Retire]) does not
// count: that action never had, and never will have, an effect. Claims of
// the legacy form (see [onceSlots]) count first, as the slots they held.
// It returns the key to claim, or "" and the first live holder when the
// key is used up.
func (k *Kernel) freeSlot(ctx context.Context, s *snapshot, slots onceSlots, limit int) (key, holder string, err error) {
	ks := k.store
	live := 0
	// Claims of earlier releases, which never went past the limit, count
	// as the slots they held.
	err = k.legacyHolders(ctx, slots, limit, func(_, id string) error {
		if !mutRetiredHolder {
			dead, err := k.retired(ctx, s, id)
			if err != nil || dead {
				return err
			}
		}
		if holder == "" {
			holder = id
		}
		live++
		return nil
	})
	if err != nil {
		return "", "", err
	}
	if live >= limit {
		return "", holder, nil
	}
	for n := 1; ; n++ {
		key := slots.key(n)
		id, err := ks.ClaimedBy(ctx, k.keySpace(), key)
		if errors.Is(err, blackboard.ErrNotFound) {
			return key, "", nil
		}
		if err != nil {
			return "", "", err
		}
		if n > limit+maxRetiredSlots {
			return "", id, nil
		}
		if !mutRetiredHolder {
			dead, err := k.retired(ctx, s, id)
			if err != nil {
				return "", "", err
			}
			if dead {
				continue
			}
		}
		if holder == "" {
			holder = id
		}
		if live++; live >= limit {
			return "", holder, nil
		}
	}
}

// legacyHolders calls fn with the holder of each legacy key of slots
// 1..limit that is claimed (see [onceSlots.legacy]). Every store is asked,
// whatever its type: a store wrapped by another decides alike.
func (k *Kernel) legacyHolders(ctx context.Context, slots onceSlots, limit int, fn func(key, id string) error) error {
	if slots.legacy == "" || mutOnceLegacy {
		return nil
	}
	ks := k.store
	for n := 1; n <= limit; n++ {
		key := slots.legacy + strconv.Itoa(n)
		id, err := ks.ClaimedBy(ctx, k.keySpace(), key)
		if errors.Is(err, blackboard.ErrNotFound) {
			return nil // legacy slots were claimed in order
		}
		if err != nil {
			return err
		}
		if err := fn(key, id); err != nil {
			return err
		}
	}
	return nil
}

// retired reports whether id is a committed action of the namespace that
// was retired: INVALIDATED, which for a committed action only [Governor.Retire]
// does.
func (k *Kernel) retired(ctx context.Context, s *snapshot, id string) (bool, error) {
	var r blackboard.Record
	if p := s.byID(id); p != nil {
		r = *p
	} else {
		var err error
		if r, err = k.store.Get(ctx, id); errors.Is(err, blackboard.ErrNotFound) {
			return false, nil
		} else if err != nil {
			return false, err
		}
	}
	return r.Namespace == k.namespace && r.Slot == blackboard.Actions && r.Mode == blackboard.ModeCommit && r.Status == blackboard.StatusInvalidated, nil
}

// retire is [Governor.Retire].
func (k *Kernel) retire(ctx context.Context, actionID string, why reason.Code, fence string) error {
	const op = "retire"
	if err := checkName("fence key", fence); err != nil {
		return newErr(op, actionID, reason.InvalidInput, blackboard.ErrInvalidInput, err.Error())
	}
	if err := checkName("reason", string(why)); err != nil {
		return newErr(op, actionID, reason.InvalidInput, blackboard.ErrInvalidInput, err.Error())
	}
	for attempt := 0; attempt < maxAttempts; attempt++ {
		act, err := k.store.Get(ctx, actionID)
		if errors.Is(err, blackboard.ErrNotFound) || err == nil && (act.Namespace != k.namespace || act.Slot != blackboard.Actions || act.Mode != blackboard.ModeCommit) {
			return newErr(op, actionID, reason.InvalidReference, ErrInvalidReference, "not a committed action")
		}
		if err != nil {
			return err
		}
		if act.Status != blackboard.StatusActive {
			return nil // retired already
		}
		b := store.Batch{Invalidations: []store.Invalidation{{ID: actionID, Status: blackboard.StatusInvalidated, Reason: why}}}
		if !mutRetireFence {
			b.Claims = []store.Claim{{Key: fence, RecordID: actionID}}
		}
		snap, err := k.loadForWrite(ctx, act.Provenance.TraceID, false)
		if err != nil {
			return err
		}
		err = snap.apply(ctx, b)
		snap.release()
		switch {
		case errors.Is(err, blackboard.ErrDuplicateKey):
			return newErr(op, actionID, reason.DuplicateAction, blackboard.ErrDuplicateKey, "an effect attempt was started: "+err.Error())
		case raced(err):
			continue // the trace changed, or another caller retired it meanwhile: read again
		}
		return err
	}
	return newErr(op, actionID, "", blackboard.ErrConflict, "too much contention on the action")
}

// Retire records that the committed action actionID will never have an
// effect (its approver denied it, its approval expired, or its executor
// refused it for good before starting it), so that the once-key slot it
// holds no longer blocks a later action: a once-key means at most one
// effect, and a retired action has none. The action becomes INVALIDATED
// with reason, and its claims stay in the store for ever; only the
// once-key check reads the holder's status.
//
// fence is the once-key the executor claims, in the kernel's namespace,
// before the action's first effect attempt. Retire claims it in the same
// batch as the status change: when an attempt was started (the fence is
// claimed) Retire fails with [blackboard.ErrDuplicateKey] and changes nothing, and
// once the action is retired no attempt can start. An action that is
// already retired is left as it is (nil). actionID must be a committed
// action of the kernel's namespace ([ErrInvalidReference]); fence and
// reason must be valid ([blackboard.ErrInvalidInput]).
//
// Retire is the executor's, through the Governor (the tool gate
// calls it): a handle cannot retire anything. Safe for concurrent use.
func (g *Governor) Retire(ctx context.Context, actionID string, why reason.Code, fence string) error {
	return g.k.retire(ctx, actionID, why, fence)
}

// onceKeyOf is [Governor.OnceKeyOf].
func (k *Kernel) onceKeyOf(ctx context.Context, actionID string) (string, error) {
	const op = "once key"
	rec, err := k.store.Get(ctx, actionID)
	if errors.Is(err, blackboard.ErrNotFound) || err == nil && (rec.Namespace != k.namespace || rec.Slot != blackboard.Actions || rec.Mode != blackboard.ModeCommit) {
		return "", newErr(op, actionID, reason.InvalidReference, ErrInvalidReference, "not a committed action")
	}
	if err != nil {
		return "", err
	}
	spec, _ := k.spec(rec.Kind)
	ks := k.store
	if spec.Once == nil {
		return "", newErr(op, actionID, "", blackboard.ErrNotFound, "the action type has no once-key")
	}
	o := spec.Once
	// Where the key's values came from: the action's payload, or an
	// observation of the key percept in the trace before the action (the
	// current one when it was decided; every earlier one is tried, newest
	// first, since only the claim itself says which it was).
	sources := []blackboard.Payload{rec.Payload}
	if o.Percept != "" {
		sources = sources[:0]
		// People and recovery ask this, not the decision path: it may
		// read the whole trace.
		recs, err := k.readTrace(ctx, rec.Provenance.TraceID)
		if err != nil {
			return "", err
		}
		at := slices.IndexFunc(recs, func(r blackboard.Record) bool { return r.ID == actionID })
		for i := at - 1; i >= 0; i-- {
			if r := &recs[i]; r.Kind == o.Percept && isObservation(r) {
				sources = append(sources, r.Payload.Clone())
			}
		}
	}
	tried := map[string]bool{}
	for _, src := range sources {
		slots, missing, err := k.onceSlots(rec.Kind, o, src)
		if missing != "" || err != nil || tried[slots.prefix] {
			continue
		}
		tried[slots.prefix] = true
		// The claimed slots are a prefix; the action's is among them.
		for n := 1; ; n++ {
			key := slots.key(n)
			id, err := ks.ClaimedBy(ctx, k.keySpace(), key)
			if errors.Is(err, blackboard.ErrNotFound) {
				break
			}
			if err != nil {
				return "", err
			}
			if id == actionID {
				return key, nil
			}
		}
		// An action committed by an earlier release holds a legacy key.
		found := ""
		err = k.legacyHolders(ctx, slots, max(o.Limit, 1), func(key, id string) error {
			if id == actionID && found == "" {
				found = key
			}
			return nil
		})
		if err != nil || found != "" {
			return found, err
		}
	}
	return "", newErr(op, actionID, "", blackboard.ErrNotFound, "the action claimed no once-key")
}

// OnceKeyOf returns the once-key the committed action actionID claimed
// when it committed (see [ActionSpec.Once]): the canonical JSON array of
// the namespace, the action type, the key's values and the commit's slot,
// unique to that action for ever. It fails with [blackboard.ErrNotFound] when the
// action's spec has no once-key or the action claimed none, and with
// [ErrInvalidReference] when actionID is not a committed action of the
// kernel's namespace. Safe for concurrent use.
func (g *Governor) OnceKeyOf(ctx context.Context, actionID string) (string, error) {
	return g.k.onceKeyOf(ctx, actionID)
}

// claimOnce reads the once-key of an action that passed every other check
// and finds a free slot for it (see [Kernel.freeSlot]), which the
// decision's batch claims; a used-up key is DUPLICATE_ACTION. Two deciders
// racing for one slot are ordered by the store: the loser's batch is
// refused and decided again, and then finds the slot taken.
func (k *Kernel) claimOnce(ctx context.Context, s *snapshot, p *blackboard.Record, o *OnceKey, out outcome) (outcome, error) {
	src := p.Payload
	if o.Percept != "" {
		pr := s.current(o.Percept)
		if pr == nil {
			return outcome{code: reason.OnceKeyMissing, detail: "no observation " + o.Percept}, nil
		}
		if code, _ := k.checkEvidence(s, pr); code != "" {
			return outcome{code: reason.OnceKeyMissing, failed: pr.ID, causes: []Cause{{Code: code, Record: pr.ID}},
				detail: "key percept fails " + string(code)}, nil
		}
		src = pr.Payload
	}
	slots, missing, err := k.onceSlots(p.Kind, o, src)
	if missing != "" {
		return outcome{code: reason.OnceKeyMissing, detail: "no key field " + missing}, nil
	}
	if err != nil {
		return outcome{}, fmt.Errorf("kernel: once-key of %s: %w", p.ID, err)
	}
	key, holder, err := k.freeSlot(ctx, s, slots, max(o.Limit, 1))
	if err != nil {
		return outcome{}, err
	}
	if key == "" {
		return outcome{code: reason.DuplicateAction, failed: holder, detail: "once-key " + slots.enc + " used up by " + holder}, nil
	}
	out.claim = store.Claim{Key: key, RecordID: out.record.ID}
	return out, nil
}
