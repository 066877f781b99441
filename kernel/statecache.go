package kernel

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/store"
)

// stateWire is the encoding of a traceState a store persists.
type stateWire struct {
	Heads    []headWire          `json:"h,omitempty"`
	Cons     []blackboard.Record `json:"c,omitempty"`
	Rejected []headWire          `json:"r,omitempty"`
	Preds    []headWire          `json:"p,omitempty"`
	Since    []headWire          `json:"s,omitempty"`
	Pending  []headWire          `json:"q,omitempty"`
	Used     []usedMark          `json:"u,omitempty"`
	// Viewable is traceState.viewable; a state stored without it is read
	// as not viewable, which is always safe.
	Viewable bool `json:"v,omitempty"`
}

type headWire struct {
	Seq        int                 `json:"s"`
	Ext        bool                `json:"e,omitempty"`
	Rec        blackboard.Record   `json:"r"`
	Artifact   *blackboard.Record  `json:"a,omitempty"`
	Percepts   []blackboard.Record `json:"p,omitempty"`
	Action     string              `json:"x,omitempty"`
	PropWriter string              `json:"w,omitempty"`
	PropRole   blackboard.Role     `json:"o,omitempty"`
}

// MarshalBinary implements [encoding.BinaryMarshaler]: the encoding a store persists ([store.Batch].State).
func (st *traceState) MarshalBinary() ([]byte, error) {
	w := stateWire{Cons: st.cons, Used: st.used, Viewable: st.viewable}
	enc := func(h *head) headWire {
		hw := headWire{Seq: h.seq, Rec: *h.rec}
		if e := h.headExt; e != nil {
			hw.Ext, hw.Artifact, hw.Percepts, hw.Action, hw.PropWriter, hw.PropRole = true, e.artifact, e.percepts, e.action, e.propWriter, e.propRole
		}
		return hw
	}
	all := func(hs []head) []headWire {
		out := make([]headWire, len(hs))
		for i := range hs {
			out[i] = enc(&hs[i])
		}
		return out
	}
	w.Heads, w.Rejected, w.Preds, w.Since, w.Pending = all(st.heads), all(st.rejected), all(st.preds), all(st.since), all(st.pending)
	return json.Marshal(w)
}

// decodeState reads what [traceState.MarshalBinary] wrote.
func decodeState(b []byte) (*traceState, error) {
	var w stateWire
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("%w: stored trace state: %v", blackboard.ErrInvalidInput, err)
	}
	if !w.known() {
		return nil, fmt.Errorf("%w: stored trace state: unknown slot, mode, status, scope or role", blackboard.ErrInvalidInput)
	}
	dec := func(hw *headWire) head {
		h := head{seq: hw.Seq, rec: &hw.Rec}
		if hw.Ext {
			h.headExt = &headExt{artifact: hw.Artifact, percepts: hw.Percepts, action: hw.Action, propWriter: hw.PropWriter, propRole: hw.PropRole}
		}
		return h
	}
	all := func(hws []headWire) []head {
		var out []head
		for i := range hws {
			out = append(out, dec(&hws[i]))
		}
		return out
	}
	st := &traceState{cons: w.Cons, used: w.Used, viewable: w.Viewable}
	st.heads, st.rejected, st.preds, st.since, st.pending = all(w.Heads), all(w.Rejected), all(w.Preds), all(w.Since), all(w.Pending)
	return st, nil
}

// stateCache keeps the states a kernel decoded last, by trace, so that a
// store that persists bytes costs a decode only when another writer
// changed the trace. Safe for concurrent use.
type stateCache struct {
	mu sync.Mutex
	m  map[string]cachedState
}

type cachedState struct {
	version uint64
	st      *traceState
}

// maxCachedStates bounds the cache; past it, the cache starts again.
const maxCachedStates = 4096

// decode returns the state ts holds, or nil when it holds none the kernel
// can read (the caller then builds it from the trace).
func (c *stateCache) decode(traceID string, ts *store.TraceState) *traceState {
	if v, ok := ts.Value.(*traceState); ok {
		return v
	}
	data := ts.Data
	if data == nil && ts.Value != nil {
		data, _ = ts.Value.MarshalBinary()
	}
	if data == nil {
		return nil
	}
	c.mu.Lock()
	e, ok := c.m[traceID]
	c.mu.Unlock()
	if ok && e.version == ts.StateVersion {
		return e.st
	}
	st, err := decodeState(data)
	if err != nil {
		return nil
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCachedStates {
		c.m = make(map[string]cachedState)
	}
	c.m[traceID] = cachedState{ts.StateVersion, st}
	c.mu.Unlock()
	return st
}

// writtenCache keeps, per trace, the state this kernel's last batch on it
// left, with the trace's length and version after that batch, so that the
// next write or decision need not read them back (see
// [Kernel.loadForWrite]). Safe for concurrent use.
//
// A kernel usually writes a handful of traces: the first four it writes
// are kept in a small array, every other in a map.
type writtenCache struct {
	mu   sync.Mutex
	few  [4]writtenEntry
	nfew int
	m    map[string]writtenState
}

type writtenEntry struct {
	trace string
	w     writtenState
}

type writtenState struct {
	len     int
	version uint64
	st      *traceState // nil: the trace exists, its state is to be read
	refold  bool        // with st nil: build the state from the trace, not the stored one
}

// slot returns traceID's entry in the array, or nil.
func (c *writtenCache) slot(traceID string) *writtenState {
	for i := range c.nfew {
		if c.few[i].trace == traceID {
			return &c.few[i].w
		}
	}
	return nil
}

func (c *writtenCache) get(traceID string) (writtenState, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.slot(traceID); p != nil {
		return *p, true
	}
	w, ok := c.m[traceID]
	return w, ok
}

func (c *writtenCache) put(traceID string, w writtenState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch p := c.slot(traceID); {
	case p != nil:
		*p = w
	case c.nfew < len(c.few):
		c.few[c.nfew] = writtenEntry{traceID, w}
		c.nfew++
	default:
		if c.m == nil || len(c.m) >= maxCachedStates {
			c.m = make(map[string]writtenState)
		}
		c.m[traceID] = w
	}
}

// drop forgets the state of a trace whose batch the store refused; the
// trace is remembered as one that exists, so that the next write reads it,
// and, when refold, reads it whole.
func (c *writtenCache) drop(traceID string, refold bool) {
	c.put(traceID, writtenState{refold: refold})
}

// refolds reports whether the next read of traceID must build its state
// from the trace, as distrusted does, without clearing that: a view does
// not take the rebuild from the decision that needs it.
func (c *writtenCache) refolds(traceID string) bool {
	w, ok := c.get(traceID)
	return ok && w.st == nil && w.refold
}

// distrusted reports whether the next read of traceID must build its state
// from the trace, and clears that.
func (c *writtenCache) distrusted(traceID string) bool {
	w, ok := c.get(traceID)
	if ok && w.st == nil && w.refold {
		c.put(traceID, writtenState{})
		return true
	}
	return false
}

// persistentCache keeps the namespace's active persistent constraints as
// last listed, with the change counter they were listed at. Safe for
// concurrent use; the slice it hands out is never modified.
type persistentCache struct {
	mu     sync.Mutex
	ok     bool
	shared uint64
	recs   []blackboard.Record
}

func (c *persistentCache) get(shared uint64) ([]blackboard.Record, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.recs, c.ok && (c.shared == shared || mutSharedCache)
}

// latest returns the list last cached and its counter.
func (c *persistentCache) latest() ([]blackboard.Record, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.recs, c.shared, c.ok
}

// reset forgets the list, after a batch conditional on it was refused.
func (c *persistentCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ok, c.recs = false, nil
}

func (c *persistentCache) put(shared uint64, recs []blackboard.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ok, c.shared, c.recs = true, shared, recs
}

// known reports whether every slot, mode, status, scope and role in w is
// one the kernel writes. They decode from any text, being strings, so a
// corrupt or forged state is refused here, and the kernel reads the trace
// instead.
func (w *stateWire) known() bool {
	rec := func(r *blackboard.Record) bool {
		return r.Slot.Valid() && r.Mode.Valid() && r.Scope.Valid() && r.Provenance.Role.Valid() &&
			(r.Status == blackboard.StatusActive || r.Status == blackboard.StatusInvalidated || r.Status == blackboard.StatusExpired)
	}
	for i := range w.Cons {
		if !rec(&w.Cons[i]) {
			return false
		}
	}
	for _, hws := range [][]headWire{w.Heads, w.Rejected, w.Preds, w.Since, w.Pending} {
		for i := range hws {
			hw := &hws[i]
			if !rec(&hw.Rec) || hw.Artifact != nil && !rec(hw.Artifact) || hw.PropRole != "" && !hw.PropRole.Valid() {
				return false
			}
			for j := range hw.Percepts {
				if !rec(&hw.Percepts[j]) {
					return false
				}
			}
		}
	}
	return true
}
