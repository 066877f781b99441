package memstore

import (
	"math"
	"sync"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// memRec is a [blackboard.Record] as the store keeps it, in 96 bytes: the
// trace id and namespace are its trace's, the fields most records leave
// empty are in more, the enumerations are bit fields of bits (see
// recBits), and the
// payload is either the map the record was appended with or, once packed
// (bitPacked), pairs packs[pos>>packShift][at:at+keys] with at the low
// packShift bits of pos (keys MaxUint16: the rest of that array, which such
// a payload has to itself).
type memRec struct {
	id, kind string
	writer   string
	reason   reason.Code
	payload  blackboard.Payload
	ts       int64
	more     *memMore
	pos      uint32
	keys     uint16
	bits     uint16
}

// The bit fields of memRec.bits. A checked record's slot and role are in
// 1..7 and its mode, status and scope in 1..3: their places in the tables
// below (see [code]).
const (
	bitsSlot   = 0 // 3 bits
	bitsRole   = 3 // 3 bits
	bitsMode   = 6 // 2 bits
	bitsStatus = 8 // 2 bits
	bitsScope  = 10
	bitPacked  = 1 << 12
)

// The values each bit field stands for; index 0, the zero value, is never
// stored, as [store.Batch.Check] refuses it. The slot's code also indexes
// memIndex.
var (
	slotOf   = [...]blackboard.Slot{"", blackboard.Percepts, blackboard.Beliefs, blackboard.Constraints, blackboard.Plans, blackboard.Evidence, blackboard.Predictions, blackboard.Actions}
	roleOf   = [...]blackboard.Role{"", blackboard.RoleKernel, blackboard.RoleTool, blackboard.RolePlanner, blackboard.RoleSymbolic, blackboard.RoleEvidence, blackboard.RoleSimulator, blackboard.RoleApprover}
	modeOf   = [...]blackboard.Mode{"", blackboard.ModePropose, blackboard.ModeCommit, ""}
	statusOf = [...]blackboard.Status{"", blackboard.StatusActive, blackboard.StatusInvalidated, blackboard.StatusExpired}
	scopeOf  = [...]blackboard.Scope{"", blackboard.ScopeEpisode, blackboard.ScopePersistent, ""}
)

// numSlots is the length of a table indexed by a slot's code.
const numSlots = len(slotOf)

// code returns v's index in table, or 0 (the zero value's) if it has none.
func code[T ~string](table []T, v T) uint16 {
	if v == "" {
		return 0
	}
	for i := 1; i < len(table); i++ {
		if table[i] == v {
			return uint16(i)
		}
	}
	return 0
}

// recBits packs the enumerations of a checked record into memRec.bits.
func recBits(r *blackboard.Record) uint16 {
	return code(slotOf[:], r.Slot)<<bitsSlot | code(roleOf[:], r.Provenance.Role)<<bitsRole | code(modeOf[:], r.Mode)<<bitsMode |
		code(statusOf[:], r.Status)<<bitsStatus | code(scopeOf[:], r.Scope)<<bitsScope
}

func (m *memRec) slotCode() uint16          { return m.bits >> bitsSlot & 7 }
func (m *memRec) slot() blackboard.Slot     { return slotOf[m.slotCode()] }
func (m *memRec) role() blackboard.Role     { return roleOf[m.bits>>bitsRole&7] }
func (m *memRec) mode() blackboard.Mode     { return modeOf[m.bits>>bitsMode&3] }
func (m *memRec) status() blackboard.Status { return statusOf[m.bits>>bitsStatus&3] }
func (m *memRec) scope() blackboard.Scope   { return scopeOf[m.bits>>bitsScope&3] }

func (m *memRec) setStatus(st blackboard.Status) {
	m.bits = m.bits&^(3<<bitsStatus) | code(statusOf[:], st)<<bitsStatus
}

// memMore holds the fields of a record that most records leave empty.
type memMore struct {
	inputRefs, evidenceRefs []string
	confidence              *float64
	ttlMS                   int64
	span                    string
}

// memPair is one key of a packed payload.
type memPair struct {
	key   string
	value any
}

// memLoc is a record's position: trace block and index within it.
type memLoc struct{ trace, idx int32 }

// A store's first trace starts in a block of firstCap records and
// firstMores memMores (a governed episode writes about nine records, two
// thirds of them with input refs: 1,520 bytes, in a 1,536-byte size
// class). Later trace blocks start with room for blockCap records (an
// episode fits) and are carved from slabs of up to slabTraces blocks. A
// longer trace grows its block with append as usual: from eleven records
// of 96 bytes at about the lengths twelve of 104 did before memRec
// shrank (12, 24, 51, 102...), so a long session's cost per call stays
// where it was. Payloads are packed into arrays of packPairs
// pairs, once recentRecords newer records of their slot have been
// appended: the window keeps the maps a kernel's decisions read (the
// records of the trace it is deciding on, just written) and costs a store
// of millions of records nothing worth counting.
const (
	firstCap      = 10
	firstMores    = 7
	blockCap      = 11
	slabTraces    = 256
	indexBlock    = 8
	recentRecords = 4096
	packPairs     = 1 << packShift
	packShift     = 12
)

// firstBlock is the one allocation of a store of one short trace.
type firstBlock struct {
	recs  [firstCap]memRec
	mores [firstMores]memMore
}

// firstBlocks recycles the first blocks of closed stores: a kernel made
// for one episode or request makes a store and closes it, and nothing
// outside a store points into its block (every read copies the fields of
// a record out), so once the store is closed its block can serve the next
// store's first trace.
var firstBlocks = sync.Pool{New: func() any { return new(firstBlock) }}

// find locates a record. Kernel ids ([store.RecordID]), which name the
// record's namespace, trace and position in it, are found through the
// trace block, so the store needs no map over every id; any other id is in
// s.others.
func (s *Store) find(id string) (memLoc, bool) {
	if ns, trace, n, ok := splitID(id); ok {
		if t, ok := s.traceOf(ns, trace); ok && n < len(s.traces[t].recs) && s.traces[t].recs[n].id == id {
			return memLoc{trace: t, idx: int32(n)}, true
		}
	}
	l, ok := s.others[id]
	return l, ok
}

// splitID is [store.SplitRecordID], with the usual kernel id of the
// default namespace (a position of a few digits, no leading zero, after
// the last colon) read here: the general parser's two scans and strconv
// call were a cost every append paid twice, in the duplicate check and in
// add.
func splitID(id string) (namespace, trace string, idx int, ok bool) {
	n, mul, i := 0, 1, len(id)-1
	for ; i >= 0 && id[i] >= '0' && id[i] <= '9'; i-- {
		n += int(id[i]-'0') * mul
		mul *= 10
	}
	if d := len(id) - 1 - i; d == 0 || d > 18 || i < 0 || id[i] != ':' || id[i+1] == '0' {
		return store.SplitRecordID(id)
	}
	// The first colon ends a slot's name, a few bytes in: a loop finds it
	// sooner than a call to strings.IndexByte.
	first := 0
	for first < i && id[first] != ':' && id[first] != '@' {
		first++
	}
	if first < i && id[first] == '@' {
		return store.SplitRecordID(id) // another namespace's id
	}
	if first+1 >= i {
		return "", "", 0, false
	}
	return blackboard.DefaultNamespace, id[first+1 : i], n - 1, true
}

// fill sets *r to the record m of trace tr as callers see it, but for its
// payload: enough for a filter. It writes in place, since a record is
// large to copy.
func fill(r *blackboard.Record, tr *memTrace, m *memRec) {
	*r = blackboard.Record{ID: m.id, Slot: m.slot(), Mode: m.mode(), Kind: m.kind, Status: m.status(), Reason: m.reason, Scope: m.scope(), Namespace: tr.namespace,
		Provenance: blackboard.Provenance{Role: m.role(), Writer: m.writer, TraceID: tr.id, TimestampMS: m.ts}}
	if x := m.more; x != nil {
		r.Provenance.InputRefs, r.Provenance.Confidence, r.Provenance.TTLMS, r.Provenance.Span = x.inputRefs, x.confidence, x.ttlMS, x.span
		r.EvidenceRefs = x.evidenceRefs
	}
}

// appendRecord appends the record m of trace tr to dst, its payload (a new
// map if m's is packed) shared with the store.
func (s *Store) appendRecord(dst []blackboard.Record, tr *memTrace, m *memRec) []blackboard.Record {
	dst = append(dst, blackboard.Record{})
	r := &dst[len(dst)-1]
	fill(r, tr, m)
	r.Payload = s.payload(m)
	return dst
}

// payload returns m's payload: the map it was appended with, or a new one
// built from its packed pairs.
func (s *Store) payload(m *memRec) blackboard.Payload {
	if m.bits&bitPacked == 0 {
		return m.payload
	}
	pairs := s.ix.packs[m.pos>>packShift][m.pos&(packPairs-1):]
	if m.keys != math.MaxUint16 {
		pairs = pairs[:m.keys]
	}
	p := make(blackboard.Payload, len(pairs))
	for _, kv := range pairs {
		p[kv.key] = kv.value
	}
	return p
}

// pack moves the payload of the record at l from its map into the packs.
// Values are shared, not copied: they are as immutable as the map was.
func (s *Store) pack(l memLoc) {
	m := &s.traces[l.trace].recs[l.idx]
	if m.payload == nil {
		return // nil stays nil; an empty map is packed as no pairs
	}
	n := len(m.payload)
	ix := s.ix
	last := len(ix.packs) - 1
	if last < 0 || cap(ix.packs[last])-len(ix.packs[last]) < n || len(ix.packs[last]) >= packPairs {
		if last+1 >= 1<<(32-packShift) {
			return // pos cannot name another array: the payload keeps its map
		}
		// A payload larger than an array gets one of its own (at 0),
		// whose length keys may not hold: MaxUint16 then means "all of
		// it".
		ix.packs = append(ix.packs, make([]memPair, 0, max(packPairs, n)))
		last++
	}
	at := len(ix.packs[last])
	for k, v := range m.payload {
		ix.packs[last] = append(ix.packs[last], memPair{k, v})
	}
	m.pos, m.keys, m.payload = uint32(last)<<packShift|uint32(at), uint16(min(n, math.MaxUint16)), nil
	m.bits |= bitPacked
}
