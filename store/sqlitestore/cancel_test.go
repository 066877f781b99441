package sqlitestore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/sqlitestore"
)

// cancelAt is a context that cancels itself the at-th time anyone asks
// for its Done channel: database/sql and the driver ask at each step of a
// call, so stepping at through 1, 2, 3... cancels a call at each of its
// steps in turn, without timing.
type cancelAt struct {
	context.Context
	at     int32
	calls  atomic.Int32
	cancel context.CancelFunc
}

func newCancelAt(at int32) *cancelAt {
	ctx, cancel := context.WithCancel(context.Background())
	return &cancelAt{Context: ctx, at: at, cancel: cancel}
}

func (c *cancelAt) Done() <-chan struct{} {
	if c.calls.Add(1) == c.at {
		c.cancel()
		// Let the goroutines that watch the context (database/sql rolls a
		// transaction back in one) act before the call goes on, as they
		// would on a loaded machine. This orders the race; nothing is
		// timed.
		time.Sleep(time.Millisecond)
	}
	return c.Context.Done()
}

// TestAttackCancelledCallIsTyped: a call whose context is cancelled while
// it runs, wherever that catches it (before the transaction, in it, at its
// commit, in a read), fails with the context's error, never with an
// untyped database/sql or driver error (sql.ErrTxDone, an interrupted
// statement) or a wrong answer (not found).
func TestAttackCancelledCallIsTyped(t *testing.T) {
	s, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "bk.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k, _ := kernel.New(kernel.Config{Store: s})
	id, err := k.Handle(blackboard.RoleTool, "t").Write(t.Context(), kernel.Entry{TraceID: "tr", Slot: blackboard.Percepts, Kind: "charge"})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := s.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]func(ctx context.Context, i int) error{
		"Apply": func(ctx context.Context, i int) error {
			r := rec.Clone()
			r.ID = fmt.Sprintf("percepts:tr:%d", 1000+i)
			return s.Apply(ctx, store.Batch{Appends: []blackboard.Record{r}})
		},
		// A commit's shape: a status change and an append, each extending
		// the trace's chain. Its record to change is appended first,
		// without the context.
		"Apply a status change": func(ctx context.Context, i int) error {
			prev, r := rec.Clone(), rec.Clone()
			prev.ID, r.ID = fmt.Sprintf("percepts:tr:%d", 100000+i), fmt.Sprintf("percepts:tr:%d", 200000+i)
			if err := s.Apply(context.Background(), store.Batch{Appends: []blackboard.Record{prev}}); err != nil {
				return fmt.Errorf("the record to change: %w", err)
			}
			return s.Apply(ctx, store.Batch{Appends: []blackboard.Record{r},
				Invalidations: []store.Invalidation{{ID: prev.ID, Status: blackboard.StatusInvalidated, Reason: reason.SupersededByCommit}}})
		},
		"Get": func(ctx context.Context, _ int) error { _, err := s.Get(ctx, rec.ID); return err },
		"FindActive": func(ctx context.Context, _ int) error {
			_, err := s.FindActive(ctx, "", "tr", blackboard.Percepts, "charge")
			return err
		},
		"ReadState": func(ctx context.Context, _ int) error { _, err := s.ReadState(ctx, "", "tr"); return err },
		"ListTrace": func(ctx context.Context, _ int) error {
			for _, err := range s.ListTrace(ctx, "", "tr") {
				if err != nil {
					return err
				}
			}
			return nil
		},
		"ListSlot": func(ctx context.Context, _ int) error {
			for _, err := range s.ListSlot(ctx, blackboard.Percepts, store.Filter{}) {
				if err != nil {
					return err
				}
			}
			return nil
		},
		"Head": func(ctx context.Context, _ int) error { _, err := s.Head(ctx, "", "tr"); return err },
		"Chain": func(ctx context.Context, _ int) error {
			for _, err := range s.Chain(ctx, "", "tr") {
				if err != nil {
					return err
				}
			}
			return nil
		},
		"ListTraces": func(ctx context.Context, _ int) error {
			for _, err := range s.ListTraces(ctx, "") {
				if err != nil {
					return err
				}
			}
			return nil
		},
	}
	i := 0
	for name, call := range calls {
		var failed int
		for round := range 2 {
			for at := int32(1); at <= 40; at++ {
				i++
				err := call(newCancelAt(at), i)
				if err == nil {
					continue
				}
				failed++
				if !errors.Is(err, context.Canceled) {
					t.Errorf("%s cancelled at step %d (round %d): %v, want context.Canceled", name, at, round, err)
				}
			}
		}
		if failed == 0 {
			t.Errorf("%s: no cancellation caught the call", name)
		}
	}
}
