package toolgate

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/canon"
)

// MaskPrefix begins every masked value the gate stores in place of a
// [Tool.Masked] field: "masked:hmac-sha256:" and the unpadded URL-safe
// base64 of HMAC-SHA256, under the gate's mask key ([WithMaskKey]), of the
// value's canonical JSON.
const MaskPrefix = "masked:hmac-sha256:"

// MinMaskKey is the shortest mask key [WithMaskKey] accepts, in bytes.
const MinMaskKey = 32

// WithMaskKey sets the key of the keyed hash that stands in the store for
// the values of the tools' masked fields ([Tool.Masked]). New refuses a
// tool that masks a field when no key is set, and a key shorter than
// [MinMaskKey] bytes. The key is copied. Destroying every copy of it
// erases the masked values for good (see the package doc, "Masked
// fields"): the stored hashes then match no value anyone can compute.
func WithMaskKey(key []byte) Option {
	return func(c *config) { c.maskKey, c.maskKeySet = slices.Clone(key), true }
}

// masker hashes masked values under the gate's key; nil when no key is
// set. Safe for concurrent use: it is never changed after New.
type masker struct{ key []byte }

// value is v's masked form.
func (m *masker) value(v any) (string, error) {
	b, err := canon.Encode(v)
	if err != nil {
		return "", err
	}
	mac := hmac.New(sha256.New, m.key)
	mac.Write(b)
	return MaskPrefix + base64.RawURLEncoding.EncodeToString(mac.Sum(nil)), nil
}

// payload returns p with each of the fields present replaced by its masked
// value: a new map sharing p's other values; p itself when no field is
// present.
func (m *masker) payload(p blackboard.Payload, fields []string) (blackboard.Payload, error) {
	if mutMaskStore || len(fields) == 0 {
		return p, nil
	}
	var out blackboard.Payload
	for _, f := range fields {
		v, has := p[f]
		if !has {
			continue
		}
		if out == nil {
			out = make(blackboard.Payload, len(p))
			for k, v := range p {
				out[k] = v
			}
		}
		h, err := m.value(v)
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

// IsMasked reports whether v is a masked value as the gate stores one.
func IsMasked(v any) bool {
	s, ok := v.(string)
	return ok && strings.HasPrefix(s, MaskPrefix)
}

// Mask returns v as the gate stores a masked field of that value: what an
// observer records in a percept field that a [Binding] compares with a
// masked argument (equal values give equal masks under one key). It fails
// when the gate has no mask key or v is not a JSON value.
func (g *Gate) Mask(v any) (string, error) {
	if g.mask == nil {
		return "", fmt.Errorf("%w: no mask key (WithMaskKey)", ErrInvalidConfig)
	}
	return g.mask.value(v)
}

// checkMasked checks a tool's masked fields: each a declared argument or
// an output field (any name: outputs have no schema), none bound by an
// order comparison, which a hash cannot answer.
func checkMasked(t *Tool) error {
	for _, f := range t.Masked {
		if f == "" || f == KeyEffect {
			return fmt.Errorf("masked field %q", f)
		}
	}
	for _, b := range t.Bindings {
		if b.Op != Equal && slices.Contains(t.Masked, b.Arg) {
			return fmt.Errorf("binding on masked argument %q is %s: a masked value can only be compared for equality", b.Arg, b.Op)
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
