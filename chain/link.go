package chain

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"sync"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/canon"
	"github.com/blackboardkernel/bk/reason"
)

// Hash is a SHA-256 hash: an event's digest or link, a checkpoint's
// digest. The zero Hash is the link before a trace's first event.
type Hash [sha256.Size]byte

// String returns the hash in lower-case hex.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// MarshalText encodes the hash as lower-case hex, for JSON.
func (h Hash) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText reads a hash written by [Hash.MarshalText].
func (h *Hash) UnmarshalText(b []byte) error {
	if len(b) != 2*len(h) {
		return fmt.Errorf("%w: a hash is %d hex digits, not %d", ErrMalformed, 2*len(h), len(b))
	}
	var out Hash
	if _, err := hex.Decode(out[:], b); err != nil {
		return fmt.Errorf("%w: hash: %v", ErrMalformed, err)
	}
	*h = out
	return nil
}

// Op says what an event did to its trace.
type Op string

// The two operations.
const (
	// OpAppend appended a record to the trace.
	OpAppend Op = "append"
	// OpStatus changed the status of one of the trace's records.
	OpStatus Op = "status"
)

// Event is one link of a trace's chain. For [OpAppend], Record is the
// record as it was appended (Status and Reason as they were then). For
// [OpStatus], Record holds the changed record's ID, Namespace and
// Provenance.TraceID, and the Status and Reason it was given; its other
// fields are zero.
type Event struct {
	Seq    uint64            `json:"seq"`
	Op     Op                `json:"op"`
	Record blackboard.Record `json:"record"`
	// Link is the event's link as the store recorded it.
	Link Hash `json:"link"`
}

// Digest returns the event's content digest: [AppendDigest] or
// [TransitionDigest] of its record.
func (e *Event) Digest() (Hash, error) {
	switch e.Op {
	case OpAppend:
		return AppendDigest(&e.Record)
	case OpStatus:
		r := &e.Record
		return TransitionDigest(r.ID, r.Status, r.Reason), nil
	}
	return Hash{}, fmt.Errorf("%w: event %d: operation %q", ErrMalformed, e.Seq, e.Op)
}

// linkPrefix is the domain of a link, so that no link is also a digest.
const linkPrefix = "bk.chain.link.v1\n"

// Next returns the link of the event at position seq with content digest
// digest, after the link prev.
func Next(prev Hash, seq uint64, digest Hash) Hash {
	var buf [len(linkPrefix) + 2*sha256.Size + 8]byte
	n := copy(buf[:], linkPrefix)
	n += copy(buf[n:], prev[:])
	binary.BigEndian.PutUint64(buf[n:], seq)
	n += 8
	copy(buf[n:], digest[:])
	return sha256.Sum256(buf[:])
}

// LinkPrefix returns the bytes a link's hash input begins with, for a
// store that computes [Next] in its own query language.
func LinkPrefix() []byte { return []byte(linkPrefix) }

// bufs holds the buffers digests are framed in, so that a digest costs
// no allocation of its own.
var bufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

const maxPooled = 64 << 10

// AppendDigest returns the content digest of an appended record: every
// field, in a framing that cannot make two records one (each string is
// preceded by its length), with the payload in canonical form and the
// namespace as stores keep it (empty is [blackboard.DefaultNamespace]).
// A payload without a canonical form (a NaN, a string that is not UTF-8)
// is [ErrMalformed], as is a NaN confidence; a confidence is framed by
// its IEEE-754 bits, -0 as 0, and an infinite one is a value like any
// other.
func AppendDigest(r *blackboard.Record) (Hash, error) {
	bp := bufs.Get().(*[]byte)
	b := append((*bp)[:0], "bk.chain.append.v1\n"...)
	b = str(b, cmp.Or(r.Namespace, blackboard.DefaultNamespace))
	b = str(b, r.Provenance.TraceID)
	b = str(b, r.ID)
	b = str(b, string(r.Slot))
	b = str(b, string(r.Mode))
	b = str(b, r.Kind)
	b = str(b, string(r.Status))
	b = str(b, string(r.Reason))
	b = str(b, string(r.Scope))
	p := &r.Provenance
	b = str(b, string(p.Role))
	b = str(b, p.Writer)
	b = binary.BigEndian.AppendUint64(b, uint64(p.TimestampMS))
	b = binary.BigEndian.AppendUint64(b, uint64(p.TTLMS))
	if c := p.Confidence; c != nil {
		// An infinite confidence is a value stores keep; NaN is not one
		// value.
		if math.IsNaN(*c) {
			return Hash{}, fmt.Errorf("%w: record %s: confidence %v", ErrMalformed, r.ID, *c)
		}
		f := *c
		if f == 0 {
			f = 0 // -0 and 0 are one confidence
		}
		b = append(b, 1)
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(f)) // one bit pattern per value, once -0 is 0

	} else {
		b = append(b, 0)
	}
	b = refs(b, p.InputRefs)
	b = refs(b, r.EvidenceRefs)
	b = str(b, p.Span)
	// The payload goes last, unframed: nothing follows it.
	var err error
	if len(r.Payload) == 0 {
		b = append(b, "{}"...) // nil and empty are one payload, as stores keep them
	} else if b, err = canon.AppendBinary(b, map[string]any(r.Payload)); err != nil {
		return Hash{}, fmt.Errorf("%w: record %s: payload: %v", ErrMalformed, r.ID, err)
	}
	h := sha256.Sum256(b)
	if cap(b) <= maxPooled {
		*bp = b
		bufs.Put(bp)
	}
	return h, nil
}

// TransitionDigest returns the content digest of a status change: the
// record's id (unique in its store), its new status and the reason. The
// trace is not in it: the link binds the event to its trace's chain, and
// a store computes the digest knowing only what the change names.
func TransitionDigest(recordID string, status blackboard.Status, why reason.Code) Hash {
	bp := bufs.Get().(*[]byte)
	b := append((*bp)[:0], "bk.chain.status.v1\n"...)
	b = str(b, recordID)
	b = str(b, string(status))
	b = str(b, string(why))
	h := sha256.Sum256(b)
	if cap(b) <= maxPooled {
		*bp = b
		bufs.Put(bp)
	}
	return h
}

func str(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// refs frames a list of ids: nil and empty are one list, as stores keep
// them.
func refs(b []byte, ids []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		b = str(b, id)
	}
	return b
}
