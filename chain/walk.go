package chain

import (
	"cmp"
	"errors"
	"fmt"

	"github.com/blackboardkernel/bk/blackboard"
)

// ErrMalformed is returned for input that is not what this package
// writes: an event with an unknown operation, a hash that is not 64 hex
// digits, a bundle that does not decode.
var ErrMalformed = errors.New("chain: malformed input")

// ErrBroken is wrapped by every [Break]: the history was changed.
var ErrBroken = errors.New("chain: history does not verify")

// Fault names what a [Break] found.
type Fault string

// The faults a verifier names.
const (
	// FaultContent: an event's link does not match its content: a field
	// of the record or status change was edited.
	FaultContent Fault = "content"
	// FaultOrder: an event sits at a position other than its own: events
	// were reordered.
	FaultOrder Fault = "order"
	// FaultGap: an event is missing from the middle of the chain.
	FaultGap Fault = "gap"
	// FaultMoved: a record of another trace sits in this one.
	FaultMoved Fault = "moved"
	// FaultTruncated: the chain ends before the head the store or a
	// checkpoint recorded.
	FaultTruncated Fault = "truncated"
	// FaultHead: the chain does not end on the head the store or a
	// checkpoint recorded: its tail was replaced.
	FaultHead Fault = "head"
	// FaultStatus: a record's status is not the one its chain gives it.
	FaultStatus Fault = "status"
	// FaultMissing: a trace a checkpoint names is not in the store.
	FaultMissing Fault = "missing_trace"
	// FaultUnchained: a record has no link at all.
	FaultUnchained Fault = "unchained"
	// FaultCheckpoint: a checkpoint's signature, key, sequence or
	// predecessor does not hold.
	FaultCheckpoint Fault = "checkpoint"
)

// Break is where a history stops verifying: the trace, the event's
// position and record, and what was found there. It is an error wrapping
// [ErrBroken].
type Break struct {
	Namespace string `json:"namespace"`
	Trace     string `json:"trace"`
	Seq       uint64 `json:"seq"`
	RecordID  string `json:"record_id,omitempty"`
	Fault     Fault  `json:"fault"`
	Detail    string `json:"detail"`
}

// Error renders the break on one line.
func (b *Break) Error() string {
	return fmt.Sprintf("chain: %s at event %d of trace %q (namespace %q, record %s): %s", b.Fault, b.Seq, b.Trace, b.Namespace, b.RecordID, b.Detail)
}

// Unwrap returns [ErrBroken].
func (b *Break) Unwrap() error { return ErrBroken }

// Head is where one trace's chain stands: how many events it holds and
// the link of the last (the zero Hash for none).
type Head struct {
	Namespace string `json:"namespace"`
	Trace     string `json:"trace"`
	Len       uint64 `json:"len"`
	Link      Hash   `json:"link"`
	// Migrated is how many of the first events a store chained when it
	// was migrated from a version without chains: records as it found
	// them, whose earlier history is not proven. It is 0 for a trace
	// chained from its first record.
	Migrated uint64 `json:"migrated,omitempty"`
}

// Walker checks one trace's events, given in order, and works out its
// head. Its memory holds the ids and statuses of the trace's records, not
// the events. A Walker is used by one goroutine.
type Walker struct {
	// Origin, when set, reads the trace a record id names (the store's
	// id form): a record whose link fails and whose id names another
	// trace is reported as [FaultMoved] rather than [FaultContent].
	Origin func(recordID string) (namespace, traceID string, ok bool)

	head   Head
	active map[string]bool // the trace's records still ACTIVE, by id
	last   map[string]blackboard.Status
	expect map[uint64][]expectation // heads to meet, by length
	broken *Break
}

// expectation is a head someone recorded: the chain must reach it.
type expectation struct {
	link Hash
	who  string
}

// NewWalker returns a Walker for trace traceID of namespace.
func NewWalker(namespace, traceID string) *Walker {
	return &Walker{head: Head{Namespace: cmp.Or(namespace, blackboard.DefaultNamespace), Trace: traceID},
		active: map[string]bool{}, last: map[string]blackboard.Status{}}
}

// Expect records, before the walk reaches it, a head someone vouched
// for: the chain must hold at least n events, event n-1's link being
// link. who names the witness in a break ("the store's head",
// "checkpoint 4"). A chain that ends before n is [FaultTruncated]; one
// whose n-th link differs is [FaultHead]. n = 0 expects nothing.
func (w *Walker) Expect(n uint64, link Hash, who string) {
	if n == 0 {
		return
	}
	if w.expect == nil {
		w.expect = map[uint64][]expectation{}
	}
	w.expect[n] = append(w.expect[n], expectation{link, who})
}

// Head returns where the events walked so far leave the chain.
func (w *Walker) Head() Head { return w.head }

// Status returns the status the walked events gave record id, and false
// for a record they never appended.
func (w *Walker) Status(id string) (blackboard.Status, bool) {
	s, ok := w.last[id]
	return s, ok
}

// Step checks the next event: its position, that it belongs to the
// trace, that a status change names an active record of the trace, that
// its link is the one its content and the chain before it give, and
// every head expected at its position. It returns the first [Break] and,
// once broken, returns that break again for every later event: a chain
// past a break proves nothing. The event's Link field is what the store
// recorded: checked, never trusted.
func (w *Walker) Step(e *Event) error {
	if w.broken != nil {
		return w.broken
	}
	r := &e.Record
	brk := func(f Fault, format string, args ...any) error {
		w.broken = &Break{Namespace: w.head.Namespace, Trace: w.head.Trace, Seq: w.head.Len, RecordID: r.ID, Fault: f, Detail: fmt.Sprintf(format, args...)}
		return w.broken
	}
	switch {
	case e.Seq > w.head.Len && !mutSkipGap():
		return brk(FaultGap, "events %d to %d are missing", w.head.Len, e.Seq-1)
	case e.Seq < w.head.Len && !mutSkipOrder():
		return brk(FaultOrder, "the event says it is number %d", e.Seq)
	}
	d, err := e.Digest()
	if err != nil {
		return brk(FaultContent, "%v", err)
	}
	link := Next(w.head.Link, w.head.Len, d)
	if link != e.Link && !mutSkipLink() {
		if w.moved(e) {
			return brk(FaultMoved, "the record's id names another trace")
		}
		return brk(FaultContent, "the recorded link is %s, the content gives %s", e.Link, link)
	}
	switch e.Op {
	case OpAppend:
		if _, dup := w.last[r.ID]; dup {
			return brk(FaultOrder, "record %s is appended twice", r.ID)
		}
		w.last[r.ID] = r.Status
		if r.Status == blackboard.StatusActive {
			w.active[r.ID] = true
		}
	case OpStatus:
		if !w.active[r.ID] && !mutSkipStatus() {
			return brk(FaultStatus, "the record is not an active record of the trace")
		}
		delete(w.active, r.ID)
		w.last[r.ID] = r.Status
	}
	w.head.Len++
	w.head.Link = link
	for _, x := range w.expect[w.head.Len] {
		if x.link != link && !mutSkipHead() {
			w.broken = &Break{Namespace: w.head.Namespace, Trace: w.head.Trace, Seq: w.head.Len - 1, RecordID: r.ID, Fault: FaultHead,
				Detail: fmt.Sprintf("%s says event %d's link is %s, the chain gives %s", x.who, w.head.Len-1, x.link, link)}
			return w.broken
		}
	}
	delete(w.expect, w.head.Len)
	return nil
}

// moved reports whether an event's record id names another trace: a
// record the store placed here that was chained elsewhere.
func (w *Walker) moved(e *Event) bool {
	if w.Origin == nil {
		return false
	}
	ns, tr, ok := w.Origin(e.Record.ID)
	return ok && (ns != w.head.Namespace || tr != w.head.Trace)
}

// Finish ends the walk. It returns the walk's first break, or a [Break]
// with [FaultTruncated] when an expected head lies past the chain's end.
func (w *Walker) Finish() error {
	if w.broken != nil {
		return w.broken
	}
	var far uint64
	var who string
	for n, xs := range w.expect {
		if n > far {
			far, who = n, xs[0].who
		}
	}
	if far > w.head.Len && !mutSkipTail() {
		w.broken = &Break{Namespace: w.head.Namespace, Trace: w.head.Trace, Seq: w.head.Len, Fault: FaultTruncated,
			Detail: fmt.Sprintf("%s says the chain holds at least %d events, it holds %d", who, far, w.head.Len)}
		return w.broken
	}
	return nil
}
