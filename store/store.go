package store

import (
	"context"
	"encoding"
	"iter"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/chain"
	"github.com/blackboardkernel/bk/internal/vouch"
	"github.com/blackboardkernel/bk/reason"
)

// Store is what the kernel calls on persistence, and nothing more: reads
// by id (Get), by kind (FindActive), by trace (ListTrace) and by slot
// (ListSlot), the once-keys a batch has claimed (ClaimedBy), Close, and one
// write, Apply, an atomic group of appends, status changes and claims. A
// single record is a one-record [Batch]; a status change is a Batch with
// one [Invalidation].
//
// Every ability beyond these is an exported optional interface that any
// store may implement, found by asserting it: [StateStore] (a trace's
// decision state, which the kernel reads in one lookup), [TraceLister]
// (an index of traces, which [ListTraces] uses) and [Chainer] (every
// trace's hash chain, which `bk verify` and signed checkpoints need). A wrapper around a store
// keeps an ability exactly when it forwards that interface; without
// StateStore the kernel still decides alike, reading the trace.
//
// # Contract
//
// Every method may be called concurrently from many goroutines. Records are
// append-only: Apply refuses, with [ErrDuplicateID], a batch that appends
// an id the store already holds (or one id twice); the only mutation is a
// status change from StatusActive to StatusInvalidated or StatusExpired,
// refused with [ErrNotActive] for a record that is no longer active, with
// [blackboard.ErrNotFound] for an unknown id, and with [blackboard.ErrInvalidInput] for any
// other target status or an empty reason ([Batch.Check]). Apply is
// all or nothing, checks the whole batch against the store as it was
// before the batch, and honours the batch's trace-length condition
// ([Batch.Trace]). Listings return records in append order, and the
// caller's loop body may call back into the store. Records a store returns
// may share memory with the store: callers must not modify them (the
// kernel clones before handing records to its handles). A method called
// with a cancelled context returns the context's error and changes
// nothing. After Close every method, Close included, returns [blackboard.ErrClosed].
// A Filter with an invalid Status or Scope is [blackboard.ErrInvalidInput]. Apply
// refuses, with [blackboard.ErrInvalidInput] or [blackboard.ErrInvalidPayload], a batch holding
// any record [Batch.Check] refuses (invalid UTF-8 in any string among
// them), and a store keeps a record with an empty Namespace as
// [blackboard.DefaultNamespace].
//
// Traces: a trace is named by its namespace and its id together. Each
// namespace is a space of trace ids of its own: one trace id used in two
// namespaces is two traces, which hold, list, count, version and condition
// batches apart, so no application can write into, lengthen or block
// another's trace whatever ids they choose. Every method that names a
// trace takes its namespace (empty: [blackboard.DefaultNamespace]); a record is in
// the trace (Namespace, TraceID()). Record ids stay unique across the
// whole store: the kernel's embed the namespace ([RecordID]).
//
// Once-keys: a store guarantees that a key is claimed at most once, for
// ever, in its namespace, across every process that shares the store: Apply
// refuses a batch that claims a key already claimed in the claim's
// namespace (or claims one key twice in one namespace) with
// [blackboard.ErrDuplicateKey], in the same transaction as the batch's other writes.
// Each namespace is a key space of its own: one key claimed in two
// namespaces is two claims, and ClaimedBy never answers for another
// namespace's key. An empty namespace is [blackboard.DefaultNamespace], as it is for
// records. Every store enforces them: the kernel claims keys for the
// evidence each action uses up, and a store that ignored claims would let a
// once-only action run twice.
//
// The package store/storetest runs one conformance suite against any Store.
type Store interface {
	// Get returns the record with that id or ErrNotFound.
	Get(ctx context.Context, id string) (blackboard.Record, error)
	// ListSlot streams every record of a slot that matches f, across all
	// traces. It is meant for analysis (the adaptive learner), not for the
	// hot path; an implementation should index Status and Scope.
	ListSlot(ctx context.Context, slot blackboard.Slot, f Filter) iter.Seq2[blackboard.Record, error]
	// FindActive returns the most recently appended ACTIVE record of that
	// kind in that slot of trace traceID of namespace, or ErrNotFound.
	FindActive(ctx context.Context, namespace, traceID string, slot blackboard.Slot, kind string) (blackboard.Record, error)
	// Apply performs a group of appends, status changes and claims
	// atomically; it is the store's only write.
	Apply(ctx context.Context, b Batch) error
	// ListTrace streams every record of trace traceID of namespace, in
	// append order, through an index: its cost must not depend on how many
	// other traces the store holds.
	ListTrace(ctx context.Context, namespace, traceID string) iter.Seq2[blackboard.Record, error]
	// ClaimedBy returns the id of the record whose batch claimed key in
	// namespace, or [blackboard.ErrNotFound] if the key is free there.
	ClaimedBy(ctx context.Context, namespace, key string) (recordID string, err error)
	// Close releases the store's resources.
	Close() error
}

// Filter narrows ListSlot: a record passes when each field is zero or
// equal to the record's.
type Filter struct {
	Status blackboard.Status
	Scope  blackboard.Scope
	// Namespace, when set, keeps only records of that namespace.
	Namespace string
}

// Batch is an atomic group of writes: all of it lands or none of it does.
// Invalidations name records that exist before the batch (a record the
// batch appends cannot be invalidated by it).
type Batch struct {
	Appends       []blackboard.Record
	Invalidations []Invalidation
	// Trace, when set, makes the batch conditional on what its author read:
	// the store refuses it with [blackboard.ErrConflict] unless trace Trace holds
	// exactly TraceLen records when the batch is applied. The kernel uses it
	// so that no decision lands after a change to its trace it did not see.
	// The trace is Trace of namespace TraceNamespace (empty:
	// [blackboard.DefaultNamespace]), for State and Version too.
	Trace          string
	TraceNamespace string
	TraceLen       int
	// Claims are once-keys the batch takes (see [Store]).
	Claims []Claim
	// State, when not nil, is the new decision state of trace Trace, kept
	// with the batch's writes (see [StateStore]); it needs Trace set. A
	// store that does not implement StateStore ignores it. The state is
	// opaque to a store, which keeps it as it is or persists its encoding
	// (MarshalBinary), and never modified after it is handed to the store.
	State encoding.BinaryMarshaler
	// Version, with State, is the trace's Version the state was derived
	// from: a StateStore refuses the batch with [blackboard.ErrConflict] unless trace
	// Trace's Version is still Version, so that no state misses a change
	// (a status change leaves the trace's length as it was).
	Version uint64
	// SharedNamespace, when set, makes the batch conditional on the
	// persistent constraints of that namespace: a StateStore refuses it
	// with [blackboard.ErrConflict] unless their change counter ([TraceState.Shared])
	// is still Shared, so that no decision lands on a list of persistent
	// constraints that changed after it was read. A store that does not
	// implement StateStore ignores both.
	SharedNamespace string
	Shared          uint64
	// Links, when it has room for one hash per append, receives from a
	// [Chainer] the chain link of each append, in the batch's order, once
	// the batch lands: each record's receipt, known without reading the
	// store again. A store that keeps no chain, or a batch that fails,
	// leaves it as it was.
	Links []chain.Hash
	// Vouch is set by this module's kernel on a batch it built from
	// entries it checked and records it made itself: [Batch.Check] passes
	// its appends without scanning them again. No code outside the module
	// can set it (its type is the module's internal one); leave it zero.
	Vouch vouch.Mark
}

// Check validates the batch before a store applies it, so that all
// stores refuse the same malformed input with the same error (wrapping
// [blackboard.ErrInvalidInput], or [blackboard.ErrInvalidPayload] for a
// payload string that is not valid UTF-8): the fields every
// store requires of each appended record, then each invalidation (a
// record can only become INVALIDATED or EXPIRED, with a reason), then each
// claim (a key and a record id). It returns the first error. The appends
// of a batch this module's kernel built, from entries it checked and
// records it made itself, pass without being scanned again: the kernel
// vouches for them through a mark no code outside the module can set, so
// every other caller's batch is checked in full.
//
// A store that holds a trace with id trace, of namespace namespace, may
// name them (both "" when it holds none it wants to name): strings it
// holds were found valid when they were stored, so a record's trace id or
// namespace equal to those is not scanned for UTF-8 again, nor is a
// string equal to the same field of the append before it. Given strings
// the store holds (valid UTF-8, as every string a store keeps is), it
// refuses exactly what Check("", "") refuses: it trusts them, so a store
// must never pass the batch's own.
func (b *Batch) Check(trace, namespace string) error {
	if err := b.checkAppends(trace, namespace); err != nil {
		return err
	}
	for _, inv := range b.Invalidations {
		if err := checkTransition(inv); err != nil {
			return err
		}
	}
	for _, c := range b.Claims {
		if err := checkClaim(c); err != nil {
			return err
		}
	}
	return nil
}

func (b *Batch) checkAppends(trace, namespace string) error {
	if trustsAll() || vouch.Vouched(b.Vouch) {
		return nil
	}
	known := knownStrings{trace: trace, namespace: namespace}
	for i := range b.Appends {
		r := &b.Appends[i]
		if err := checkStorable(r, &known); err != nil {
			return err
		}
		known.prev = r
	}
	return nil
}

// StateStore is the optional interface of a [Store] that keeps, per trace,
// the decision state the kernel derives from it: with it, a decision reads
// one small value instead of every record of its trace, so a decision costs
// the same at the first record of a session and at the millionth. A store
// without it still works: the kernel then reads the whole trace.
//
// A store that implements StateStore counts, per trace, every change: each
// Apply that appends a record to a trace or changes the status of one of
// its records adds one to that trace's Version, once per batch. A batch
// with a State keeps it as its trace's state, with StateVersion the
// Version the batch left; so the state is current exactly when
// StateVersion equals Version, and any write the kernel did not make (a
// batch without a State) shows as a state that is not.
//
// It also counts, per namespace, the changes of that namespace's
// persistent constraints: each Apply that appends a record with Slot
// [blackboard.Constraints] and Scope [blackboard.ScopePersistent] in the namespace, or changes
// the status of such a record, adds one to the namespace's counter
// (TraceState.Shared), once per batch; no other write moves it. A reader
// that keeps the namespace's active persistent constraints need list them
// again only when that counter has moved.
type StateStore interface {
	Store
	// ReadState returns, in one read, the counters of trace traceID of
	// namespace (empty: [blackboard.DefaultNamespace]), its last stored state, and the
	// change counter of the persistent constraints of that namespace. An empty or unknown trace has
	// the zero TraceState but for Shared, which is the namespace's all the
	// same.
	ReadState(ctx context.Context, namespace, traceID string) (TraceState, error)
}

// TraceState is what a [StateStore] holds for one trace.
type TraceState struct {
	// Len is how many records the trace holds.
	Len int
	// Namespace is the namespace of the trace's records: the one asked
	// about ("" when the trace holds none).
	Namespace string
	// Version counts the changes that reached the trace (see [StateStore]).
	Version uint64
	// Shared counts the changes of the persistent constraints of the
	// namespace ReadState was asked about (see [StateStore]), which need
	// not be Namespace: it is read for an unknown trace too. Only its
	// changes mean anything; its first value may be any number.
	Shared uint64
	// StateVersion is the Version that the batch which stored the state
	// left (0 when no state is stored).
	StateVersion uint64
	// Value is the stored state itself, from a store that keeps values in
	// memory; Data is its encoding (Value.MarshalBinary), from a store that
	// persists bytes. At most one is set.
	Value encoding.BinaryMarshaler
	Data  []byte
}

// Claim takes a once-key for a record of the batch, in the key space of
// Namespace (empty: [blackboard.DefaultNamespace]). The kernel claims only in its own
// namespace.
type Claim struct {
	Key       string
	RecordID  string
	Namespace string
}

// Invalidation is a status change inside a Batch.
type Invalidation struct {
	ID     string
	Status blackboard.Status // StatusInvalidated or StatusExpired
	Reason reason.Code
}

// trustsAll reports whether every batch's appends pass Check unscanned,
// which only the mutation store_trusts_all makes so.
func trustsAll() bool {
	return mutTrustAll
}
