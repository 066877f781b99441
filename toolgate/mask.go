package toolgate

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/mask"
)

// masker hashes masked values under one key for every trace, or under
// each trace's key from ring in the gate's namespace; nil when neither is
// set. Safe for concurrent use: it is never changed after New.
type masker struct {
	key       []byte
	ring      mask.Keyring
	namespace string // the gate's kernel's, set by New
}

// keyError is a failure to get a trace's key: the gate answers it with
// the error itself and writes nothing, never with a record.
type keyError struct{ err error }

func (e *keyError) Error() string { return e.err.Error() }
func (e *keyError) Unwrap() error { return e.err }

// keyFailed reports whether err is a failure to get a trace's key.
func keyFailed(err error) bool {
	var ke *keyError
	return errors.As(err, &ke)
}

// keyOf is the key of trace's masked values.
func (m *masker) keyOf(ctx context.Context, trace string) ([]byte, error) {
	if m.ring == nil {
		return m.key, nil
	}
	k, err := m.ring.Key(ctx, m.namespace, trace)
	if err != nil {
		return nil, &keyError{fmt.Errorf("mask key of trace %q in namespace %q: %w", trace, m.namespace, err)}
	}
	if len(k) < mask.MinKey {
		return nil, &keyError{fmt.Errorf("%w: mask key of trace %q in namespace %q has %d bytes (want at least %d)", blackboard.ErrInvalidInput, trace, m.namespace, len(k), mask.MinKey)}
	}
	return k, nil
}

// value is v's masked form in trace.
func (m *masker) value(ctx context.Context, trace string, v any) (string, error) {
	key, err := m.keyOf(ctx, trace)
	if err != nil {
		return "", err
	}
	return mask.Hash(key, v)
}

// payload returns p with each of the fields present replaced by its masked
// value in trace: a new map sharing p's other values; p itself when no
// field is present. A failure to get the key is a [keyError].
func (m *masker) payload(ctx context.Context, trace string, p blackboard.Payload, fields []string) (blackboard.Payload, error) {
	if !masksStored() || len(fields) == 0 {
		return p, nil
	}
	var out blackboard.Payload
	var key []byte
	for _, f := range fields {
		v, has := p[f]
		if !has {
			continue
		}
		if out == nil {
			var err error
			if key, err = m.keyOf(ctx, trace); err != nil {
				return nil, err
			}
			out = make(blackboard.Payload, len(p))
			for k, v := range p {
				out[k] = v
			}
		}
		h, err := mask.Hash(key, v)
		if err != nil {
			return nil, fmt.Errorf("masked field %q: %w", f, err)
		}
		out[f] = h
	}
	if out == nil {
		return p, nil
	}
	return out, nil
}

// checkMasked checks a tool's masked fields: each a declared argument or
// an output field (any name: outputs have no schema), none bound by an
// order comparison, which a hash cannot answer.
func checkMasked(t *Tool) error {
	for _, f := range t.Masked {
		if f == "" || f == audit.KeyEffect {
			return fmt.Errorf("masked field %q", f)
		}
	}
	for _, b := range t.Bindings {
		if b.Op != opEqual && slices.Contains(t.Masked, b.Arg) {
			return fmt.Errorf("binding on masked argument %q is %s: a masked value can only be compared for equality", b.Arg, b.Op)
		}
	}
	return nil
}

// checkMaskedOnce refuses, under a keyring, a tool whose once-key reads a
// masked field: of its own arguments, or of the percept it names, when a
// tool of the gate records that percept with the field masked. A once-key
// holds across traces, and each trace hashes the same value under its own
// key, so the key would no longer stop a repeat in another trace.
func checkMaskedOnce(g *Gate) error {
	if g.mask == nil || g.mask.ring == nil {
		return nil
	}
	for _, e := range g.order {
		if e.Once == nil {
			continue
		}
		masked := e.Masked
		if e.Once.Percept != "" {
			masked = nil
			for _, o := range g.order {
				if o.resultKind() == e.Once.Percept {
					masked = append(masked, o.Masked...)
				}
			}
		}
		for i, f := range e.Once.Fields {
			if slices.Contains(masked, f) {
				return configError(toolField(e.Name, fmt.Sprintf("Once.Fields[%d]", i)), "once-key field %q is masked, and under a keyring (MaskKeys) each trace hashes it under its own key, so the once-key would not hold across traces", f)
			}
		}
	}
	return nil
}

// unmasked merges the real values of masked fields (real, the call's own,
// held in memory only) into the stored arguments: what the effect gets.
func unmasked(stored, real blackboard.Payload, fields []string) blackboard.Payload {
	out := stored.Clone()
	for _, f := range fields {
		if v, has := real[f]; has {
			out[f] = v
		}
	}
	return out
}
