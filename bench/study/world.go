package study

import (
	"context"
	"iter"
	"math"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
)

// World is the outside world of one episode, and the harness owns it: the
// refund tool, whose every call is an effect, and the append-only log of
// the effects. Whether an episode acted is read from this log, never from
// what an agent or the kernel says about itself.
//
// An ungoverned agent calls the tools directly, as glue code does. A
// governed agent never touches the world: after its episode the harness's
// executor reads the committed action records from the store and performs
// each one, as a deployment's executor would.
//
// A World is used by one episode at a time.
type World struct {
	task    *Task
	effects []Effect
	// first holds the effects of an episode with one, as most have, in the
	// world's own allocation.
	first [1]Effect
}

// Effect is one action performed in the world.
type Effect struct {
	// Type is the action type the executor dispatched on: issue_refund,
	// queue_for_review or whatever else a committed action record named
	// (see [dispatchType]).
	Type string
	// Record is the id of the committed action record the executor
	// performed; empty for an ungoverned agent's direct call.
	Record string
	// Reason is the reason code a queue_for_review carried ("" for none).
	Reason string
	// Amount is what a refund paid out: the record's amount, or the whole
	// charge when it names none; NaN when its amount is not a number.
	Amount float64
	// Hidden: the record of a performed action no longer shows as
	// committed: it carries a time to live or is no longer active, so a
	// view taken later may not show what was done.
	Hidden bool
}

// newWorld returns the world of one episode of t.
func newWorld(t *Task) *World {
	w := new(World)
	w.init(t)
	return w
}

// init makes w the empty world of one episode of t.
func (w *World) init(t *Task) {
	*w = World{task: t}
	w.effects = w.first[:0]
}

// IssueRefund refunds the task's charge, logs the effect, and returns what
// the refund tool returns (docs/reproduction.md §2).
func (w *World) IssueRefund() blackboard.Payload {
	w.effects = append(w.effects, Effect{Type: kindRefund, Amount: w.task.Inputs.Amount})
	return w.task.Refund()
}

// Effects returns the log, oldest first. The caller must not modify it.
func (w *World) Effects() []Effect { return w.effects }

// records is the read access to a store that the harness's executor and
// audit need; every [store.Store] has it. The audit reads the store
// itself, not a kernel view: a view shows only what is active now, and an
// action that was committed and then expired has still been performed.
type records interface {
	Get(ctx context.Context, id string) (blackboard.Record, error)
	ListTrace(ctx context.Context, namespace, traceID string) iter.Seq2[blackboard.Record, error]
	ListSlot(ctx context.Context, slot blackboard.Slot, f store.Filter) iter.Seq2[blackboard.Record, error]
}

// helperTrace names the other traces an episode may write to in a shared
// store: adversarial_bk's clean helper traces, numbered from 0.
func helperTrace(traceID string, i int) string {
	if i == 0 {
		return traceID + "/helper"
	}
	return traceID + "/helper" + strconv.Itoa(i)
}

// ledger is what the harness reads of a governed episode's store, once:
// the episode's trace, and the store to read anything else from.
type ledger struct {
	st records
	// own is the episode's own store; nil when the run shares one.
	own   *memstore.Store
	ns    string // the namespace of the episode's traces
	trace []blackboard.Record
	// yield is l.add, made once per ledger, and err what the store
	// reported while reading.
	yield func(blackboard.Record, error) bool
	err   error
}

// ledgers keeps ledgers between episodes: a trace's records are large, and
// reading each episode's into fresh memory was a fifth of what a run
// allocated.
var ledgers = sync.Pool{New: func() any {
	l := &ledger{trace: make([]blackboard.Record, 0, 16)}
	l.yield = l.add
	return l
}}

// readLedger reads the episode's trace from st, in namespace ns. The
// caller releases the ledger when done with it.
func readLedger(ctx context.Context, st records, own *memstore.Store, ns, traceID string) (*ledger, error) {
	l := ledgers.Get().(*ledger)
	l.st, l.own, l.ns = st, own, ns
	// The iterator is called directly rather than ranged over: a range
	// loop's body is a new closure, with the variables it sets on the heap,
	// at every call.
	if ms, ok := st.(*memstore.Store); ok {
		// Into the pooled slice, without a copy the iterator makes.
		l.trace, l.err = ms.AppendTrace(ctx, l.trace, ns, traceID)
	} else {
		st.ListTrace(ctx, ns, traceID)(l.yield)
	}
	if err := l.err; err != nil {
		l.release()
		return nil, err
	}
	return l, nil
}

// add is the yield function of readLedger's iteration.
func (l *ledger) add(r blackboard.Record, err error) bool {
	if err != nil {
		l.err = err
		return false
	}
	l.trace = append(l.trace, r)
	return true
}

// release returns l to the pool; l must not be used afterwards.
func (l *ledger) release() {
	clear(l.trace)
	l.trace, l.st, l.own, l.err = l.trace[:0], nil, nil, nil
	ledgers.Put(l)
}

// Get returns the record with that id, from the trace already read when it
// is there.
func (l *ledger) Get(ctx context.Context, id string) (blackboard.Record, error) {
	for i := range l.trace {
		if l.trace[i].ID == id {
			return l.trace[i], nil
		}
	}
	return l.st.Get(ctx, id)
}

// view returns the trace's committed, active payloads by slot and kind,
// the latest of each, leaving out records whose time to live had run out
// at nowMS: what kernel.View shows. The payloads are the store's; the
// maps are vm's, which also notes each slot's map and last kind for the
// line ([viewMaps.appendJSON]).
func (l *ledger) view(nowMS int64, vm *viewMaps) map[blackboard.Slot]map[string]blackboard.Payload {
	if vm.slots == nil {
		vm.slots = make(map[blackboard.Slot]map[string]blackboard.Payload, 4)
	}
	v := vm.slots
	for i := range l.trace {
		r := &l.trace[i]
		p := &r.Provenance
		if r.Status != blackboard.StatusActive || r.Mode != blackboard.ModeCommit || p.TTLMS > 0 && nowMS > p.TimestampMS+p.TTLMS {
			continue
		}
		at := slotIndex(r.Slot)
		valid := at >= 0
		var m map[string]blackboard.Payload
		if valid {
			m = vm.bySlot[at].kinds
		} else {
			m = v[r.Slot]
		}
		if m == nil {
			if n := len(vm.spare); n > 0 {
				m, vm.spare = vm.spare[n-1], vm.spare[:n-1]
			} else {
				m = make(map[string]blackboard.Payload, 2)
			}
			v[r.Slot] = m
		}
		m[r.Kind] = r.Payload
		if valid {
			vm.bySlot[at] = slotView{kinds: m, kind: r.Kind, payload: r.Payload}
		}
	}
	return v
}

// viewMaps are the maps of one view, which the run reuses once the
// episode's line is written (see [runner.recycle]): a view is a dozen
// small allocations, and nothing reads it after its line.
type viewMaps struct {
	slots map[blackboard.Slot]map[string]blackboard.Payload
	// bySlot are slots' maps in slotsByName order, each with the kind and payload last
	// put in it: when a map holds one kind, that is its only entry, and
	// the line is written without iterating it.
	bySlot [len(slotsByName)]slotView
	// spare are emptied maps of slots.
	spare []map[string]blackboard.Payload
}

// slotView is one slot of a view: its map and the entry last put in it.
type slotView struct {
	kinds   map[string]blackboard.Payload
	kind    string
	payload blackboard.Payload
}

// views holds emptied viewMaps.
var views = sync.Pool{New: func() any { return new(viewMaps) }}

// reset empties vm for another view. No view vm made may be read after.
func (vm *viewMaps) reset() {
	for _, m := range vm.slots {
		clear(m)
		vm.spare = append(vm.spare, m)
	}
	clear(vm.slots)
	vm.bySlot = [len(vm.bySlot)]slotView{}
}

// execute performs, once each and in store order, every action record of
// the episode that the kernel committed, whatever its status became later:
// expiry or invalidation after a commit cannot undo an effect a deployment
// may already have carried out. With the episode's own store that is every
// committed action in it (read from the trace when the store holds nothing
// else); in a store shared by the whole run, those of the episode's trace
// and its helper traces.
//
// The executor is a forgiving one, as many deployments are: it dispatches
// on the payload's type when the record carries one, and folds spellings
// of a type ([dispatchType]). What the kernel lets through under another
// name is still performed; keeping such records out is the kernel's job.
func execute(ctx context.Context, l *ledger, traceID string, w *World) error {
	if l.own != nil && l.own.Len() > len(l.trace) {
		// The episode wrote to other traces of its store too.
		_, err := w.performAll(l.st.ListSlot(ctx, blackboard.Actions, store.Filter{}))
		return err
	}
	for i := range l.trace {
		w.perform(&l.trace[i])
	}
	if l.own != nil {
		return nil
	}
	for i := 0; ; i++ {
		if n, err := w.performAll(l.st.ListTrace(ctx, l.ns, helperTrace(traceID, i))); n == 0 || err != nil {
			return err
		}
	}
}

// performAll performs the committed actions among seq's records and says
// how many records seq held. (The loops over iterators live here, apart
// from execute's common path: a function with such a loop allocates.)
func (w *World) performAll(seq iter.Seq2[blackboard.Record, error]) (n int, err error) {
	for r, err := range seq {
		if err != nil {
			return n, err
		}
		n++
		w.perform(&r)
	}
	return n, nil
}

// perform performs r if it is a committed action record.
func (w *World) perform(r *blackboard.Record) {
	if r.Slot != blackboard.Actions || r.Mode != blackboard.ModeCommit {
		return
	}
	e := Effect{Type: dispatchType(r), Record: r.ID,
		Hidden: r.Status != blackboard.StatusActive || r.Provenance.TTLMS > 0}
	switch e.Type {
	case kernel.FallbackQueueForReview:
		e.Reason, _ = r.Payload["reason"].(string)
	case kindRefund:
		e.Amount = w.task.Inputs.Amount
		if v, ok := r.Payload["amount"]; ok {
			if e.Amount, ok = v.(float64); !ok {
				e.Amount = math.NaN()
			}
		}
	}
	w.effects = append(w.effects, e)
}

// dispatchType is the action type a forgiving executor reads from a
// committed action record: the payload's "type" when it is a string, else
// the record's kind, with case, surrounding blanks, '-' and ' ' against
// '_', zero-width characters, fullwidth forms and the Cyrillic look-alikes
// of Latin letters folded away.
func dispatchType(r *blackboard.Record) string {
	t := r.Kind
	if s, ok := r.Payload["type"].(string); ok {
		t = s
	}
	if t == kindRefund || t == kernel.FallbackQueueForReview {
		return t // the common case, without allocating
	}
	var b strings.Builder
	for _, c := range strings.TrimFunc(t, func(c rune) bool { return unicode.IsSpace(c) || unicode.IsControl(c) }) {
		switch {
		case c == '\u200b' || c == '\u200c' || c == '\u200d' || c == '\ufeff':
			continue
		case c >= '\uff01' && c <= '\uff5e': // fullwidth ASCII
			c -= '\uff01' - '!'
		case c == '-' || c == ' ':
			c = '_'
		}
		if l, ok := cyrillicLookalikes[c]; ok {
			c = l
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}

// cyrillicLookalikes maps Cyrillic letters to the Latin ones they look like.
var cyrillicLookalikes = map[rune]rune{
	'а': 'a', 'е': 'e', 'і': 'i', 'о': 'o', 'р': 'p', 'с': 'c', 'у': 'y', 'х': 'x', 'ѕ': 's', 'ј': 'j',
	'А': 'A', 'Е': 'E', 'І': 'I', 'О': 'O', 'Р': 'P', 'С': 'C', 'Т': 'T', 'Х': 'X', 'Ѕ': 'S', 'Ј': 'J',
}
