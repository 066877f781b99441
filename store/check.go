package store

import (
	"fmt"
	"unicode/utf8"

	"github.com/blackboardkernel/bk/blackboard"
)

// checkStorable is the minimum any store demands of a record it appends.
// Stores call it through [Batch.Check]. known holds strings already
// found valid UTF-8 (see [Batch.Check]):
// a string of r equal to one of them is not scanned again.
func checkStorable(r *blackboard.Record, known *knownStrings) error {
	switch {
	case r.ID == "":
		return fmt.Errorf("%w: empty record id", blackboard.ErrInvalidInput)
	case !r.Slot.Valid():
		return fmt.Errorf("%w: record %s: bad slot", blackboard.ErrInvalidInput, r.ID)
	case !r.Mode.Valid():
		return fmt.Errorf("%w: record %s: bad mode", blackboard.ErrInvalidInput, r.ID)
	case !knownStatus(r.Status):
		return fmt.Errorf("%w: record %s: bad status", blackboard.ErrInvalidInput, r.ID)
	case !r.Scope.Valid():
		return fmt.Errorf("%w: record %s: bad scope", blackboard.ErrInvalidInput, r.ID)
	case !r.Provenance.Role.Valid():
		return fmt.Errorf("%w: record %s: bad role", blackboard.ErrInvalidInput, r.ID)
	case r.Kind == "":
		return fmt.Errorf("%w: record %s: empty kind", blackboard.ErrInvalidInput, r.ID)
	case r.Provenance.TraceID == "":
		return fmt.Errorf("%w: record %s: empty trace id", blackboard.ErrInvalidInput, r.ID)
	case r.Provenance.TTLMS < 0 || r.Provenance.TTLMS > maxTTLMS:
		return fmt.Errorf("%w: record %s: ttl_ms %d outside [0, %d]", blackboard.ErrInvalidInput, r.ID, r.Provenance.TTLMS, maxTTLMS)
	case len(r.Provenance.Span) > maxSpanLen:
		return fmt.Errorf("%w: record %s: span longer than %d bytes", blackboard.ErrInvalidInput, r.ID, maxSpanLen)
	}
	if !known.valid(r) {
		return fmt.Errorf("%w: record %s: a string is not valid UTF-8", blackboard.ErrInvalidInput, r.ID)
	}
	if !utf8Value(map[string]any(r.Payload)) {
		return fmt.Errorf("%w: record %s: a payload string is not valid UTF-8", blackboard.ErrInvalidPayload, r.ID)
	}
	return nil
}

// knownStrings are strings found valid UTF-8: a trace id and namespace a
// store holds, and the record checked before (prev; nil for none).
type knownStrings struct {
	trace, namespace string
	prev             *blackboard.Record
}

// valid reports whether every string of r is valid UTF-8, scanning only
// those it does not know: a string equal to a known one is (the equality
// test costs less than the scan, and nothing when both share memory, as a
// batch's records usually do). Ids are scanned: telling one built of a
// known trace id by its form costs as much as the scan.
func (k *knownStrings) valid(r *blackboard.Record) bool {
	p := &r.Provenance
	prev := k.prev
	if prev == nil {
		prev = &noRecord
	}
	return (p.TraceID == k.trace || p.TraceID == prev.Provenance.TraceID || utf8.ValidString(p.TraceID)) &&
		utf8.ValidString(r.ID) &&
		(r.Namespace == k.namespace || r.Namespace == prev.Namespace || utf8.ValidString(r.Namespace)) &&
		(r.Kind == prev.Kind || utf8.ValidString(r.Kind)) &&
		(p.Writer == prev.Provenance.Writer || utf8.ValidString(p.Writer)) &&
		(r.Reason == prev.Reason || utf8.ValidString(string(r.Reason))) &&
		utf8.ValidString(p.Span) && validUTF8(p.InputRefs...) && validUTF8(r.EvidenceRefs...)
}

// noRecord stands for the record before the first: its strings are all
// empty, which is valid UTF-8.
var noRecord blackboard.Record

func validUTF8(ss ...string) bool {
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}

// utf8Value reports whether every string in a payload value (keys
// included) is valid UTF-8.
func utf8Value(v any) bool {
	switch x := v.(type) {
	case string:
		return utf8.ValidString(x)
	case map[string]any:
		for k, e := range x {
			if !utf8.ValidString(k) || !utf8Value(e) {
				return false
			}
		}
	case blackboard.Payload:
		return utf8Value(map[string]any(x))
	case []any:
		for _, e := range x {
			if !utf8Value(e) {
				return false
			}
		}
	case []string:
		return validUTF8(x...)
	}
	return true
}

func checkClaim(c Claim) error {
	if c.Key == "" || c.RecordID == "" || !validUTF8(c.Key, c.RecordID, c.Namespace) {
		return fmt.Errorf("%w: claim needs a valid key and record id", blackboard.ErrInvalidInput)
	}
	return nil
}

// CheckFilter validates the arguments of [Store.ListSlot].
func CheckFilter(slot blackboard.Slot, f Filter) error { return checkFilter(slot, f) }

func checkFilter(slot blackboard.Slot, f Filter) error {
	switch {
	case !slot.Valid():
		return fmt.Errorf("%w: slot %q", blackboard.ErrInvalidInput, slot)
	case f.Status != "" && !knownStatus(f.Status):
		return fmt.Errorf("%w: filter status %q", blackboard.ErrInvalidInput, f.Status)
	case f.Scope != "" && !f.Scope.Valid():
		return fmt.Errorf("%w: filter scope %q", blackboard.ErrInvalidInput, f.Scope)
	}
	return nil
}

func checkTransition(inv Invalidation) error {
	if inv.Status != blackboard.StatusInvalidated && inv.Status != blackboard.StatusExpired {
		return fmt.Errorf("%w: %s: a record can only become INVALIDATED or EXPIRED, not %s", blackboard.ErrInvalidInput, inv.ID, inv.Status)
	}
	if inv.Reason == "" {
		return fmt.Errorf("%w: %s: invalidation without a reason code", blackboard.ErrInvalidInput, inv.ID)
	}
	return nil
}

// maxSpanLen bounds Provenance.Span: a W3C traceparent is 55 bytes.
const maxSpanLen = 128

// knownStatus reports whether st is one of the three statuses a record may have.
func knownStatus(st blackboard.Status) bool {
	return st == blackboard.StatusActive || st == blackboard.StatusInvalidated || st == blackboard.StatusExpired
}
