package kernel

import (
	"context"
	"errors"
	"strconv"
)

// ClaimedBy returns the id of the record whose write claimed the once-key
// key (an action's commit, or a tool write's [Entry.OnceKeys]), or an
// error wrapping [ErrNotFound] when the key is free. It fails with
// [ErrInvalidInput] when the store does not enforce once-keys. Governance
// code built on the kernel (an executor asking whether an effect already
// has a recorded result) uses it; it never writes.
func (k *Kernel) ClaimedBy(ctx context.Context, key string) (string, error) {
	ks, ok := k.store.(KeyStore)
	if !ok {
		return "", newErr("claimed by", "", CodeInvalidInput, ErrInvalidInput, "the store does not enforce once-keys")
	}
	if err := checkName("once-key", key); err != nil {
		return "", newErr("claimed by", "", CodeInvalidInput, ErrInvalidInput, err.Error())
	}
	return ks.ClaimedBy(ctx, key)
}

// OnceKeyOf returns the once-key the committed action actionID claimed
// when it committed (see [ActionSpec.Once]): a string naming the
// namespace, the action type, the key's values and the commit's slot
// under the limit, unique to that action for ever. It fails with
// [ErrNotFound] when the action's spec has no once-key or the action
// claimed none, and with [ErrInvalidReference] when actionID is not a
// committed action of the kernel's namespace.
func (k *Kernel) OnceKeyOf(ctx context.Context, actionID string) (string, error) {
	const op = "once key"
	rec, err := k.store.Get(ctx, actionID)
	if errors.Is(err, ErrNotFound) || err == nil && (rec.Namespace != k.namespace || rec.Slot != Actions || rec.Mode != ModeCommit) {
		return "", newErr(op, actionID, CodeInvalidReference, ErrInvalidReference, "not a committed action")
	}
	if err != nil {
		return "", err
	}
	spec, _ := k.spec(rec.Kind)
	ks, isKeyStore := k.store.(KeyStore)
	if spec.Once == nil || !isKeyStore {
		return "", newErr(op, actionID, "", ErrNotFound, "the action type has no once-key")
	}
	o := spec.Once
	// Where the key's values came from: the action's payload, or an
	// observation of the key percept in the trace before the action (the
	// current one when it was decided; every earlier one is tried, newest
	// first, since only the claim itself says which it was).
	sources := []Payload{rec.Payload}
	if o.Percept != "" {
		sources = sources[:0]
		snap, err := k.load(ctx, rec.TraceID(), false)
		if err != nil {
			return "", err
		}
		for i := snap.indexOf(actionID) - 1; i >= 0; i-- {
			if r := &snap.recs[i]; r.Kind == o.Percept && isObservation(r) {
				sources = append(sources, r.Payload.Clone())
			}
		}
		snap.release()
	}
	tried := map[string]bool{}
	for _, src := range sources {
		base, _, missing, err := k.onceBase(rec.Kind, o, src)
		if missing != "" || err != nil || tried[base] {
			continue
		}
		tried[base] = true
		for i := 1; i <= max(o.Limit, 1); i++ {
			key := base + strconv.Itoa(i)
			id, err := ks.ClaimedBy(ctx, key)
			if err == nil && id == actionID {
				return key, nil
			}
			if err != nil && !errors.Is(err, ErrNotFound) {
				return "", err
			}
		}
	}
	return "", newErr(op, actionID, "", ErrNotFound, "the action claimed no once-key")
}
