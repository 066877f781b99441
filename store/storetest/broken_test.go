package storetest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
)

// brokenEnv names, in a helper process of TestSuiteCatchesBrokenStores,
// the broken store whose cases the helper runs.
const brokenEnv = "BK_STORETEST_BROKEN"

// brokenStore is a memory store whose Apply breaks one contract: apply
// receives the batch and the store underneath.
type brokenStore struct {
	store.Store
	apply func(ctx context.Context, s store.Store, b store.Batch) error
}

func (b *brokenStore) Apply(ctx context.Context, batch store.Batch) error {
	return b.apply(ctx, b.Store, batch)
}

// lone reports whether b is one record alone or one status change alone,
// the batches the suite's helpers appendOne and setStatus build.
func lone(b store.Batch) bool {
	return len(b.Appends)+len(b.Invalidations) == 1 && len(b.Claims) == 0
}

// swallow returns an Apply that reports success for a batch that match
// selects when the store refuses it with one of errs.
func swallow(match func(store.Batch) bool, errs ...error) func(context.Context, store.Store, store.Batch) error {
	return func(ctx context.Context, s store.Store, b store.Batch) error {
		err := s.Apply(ctx, b)
		for _, e := range errs {
			if match(b) && errors.Is(err, e) {
				return nil
			}
		}
		return err
	}
}

func loneAppend(b store.Batch) bool { return lone(b) && len(b.Appends) == 1 }
func loneChange(b store.Batch) bool { return lone(b) && len(b.Invalidations) == 1 }

// broken is a store that breaks one contract, the cases of the suite that
// must fail on it, and words each failure must show.
type broken struct {
	name  string
	cases []string
	want  []string
	open  func() store.Store
}

// applying returns a factory of memory stores whose Apply is apply.
func applying(apply func(ctx context.Context, s store.Store, b store.Batch) error) func() store.Store {
	return func() store.Store { return &brokenStore{Store: memstore.New(), apply: apply} }
}

func brokenStores() []broken {
	var appends atomic.Int64
	return []broken{
		{"accepts a duplicate id", []string{"AppendOnly", "ConcurrentDuplicate"},
			[]string{"Apply refuses an id the store holds", "both succeeded"},
			applying(swallow(loneAppend, store.ErrDuplicateID))},
		{"accepts an invalid record", []string{"MalformedRecord", "InvalidUTF8", "TTLBounds"},
			[]string{"Apply refuses a record with empty id", "Apply refuses a record with invalid UTF-8 in the id",
				"Apply refuses a record with a TTL outside"},
			applying(swallow(loneAppend, blackboard.ErrInvalidInput, blackboard.ErrInvalidPayload))},
		{"changes a record that is not active", []string{"InvalidateNotActive", "ConcurrentInvalidate"},
			[]string{"Apply refuses a status change of a record that is not ACTIVE", "both succeeded"},
			applying(swallow(loneChange, store.ErrNotActive))},
		{"accepts an invalid status change", []string{"InvalidateBadInput"},
			[]string{"Apply refuses a status change with a target status ACTIVE"},
			applying(swallow(loneChange, blackboard.ErrInvalidInput))},
		{"lands part of a batch refused for a status change", []string{"InvalidateBadInput"},
			[]string{"Apply refuses a batch holding a status change with a", "a batch refused for its status change appends nothing"},
			applying(func(ctx context.Context, s store.Store, b store.Batch) error {
				err := s.Apply(ctx, b)
				if errors.Is(err, blackboard.ErrInvalidInput) && len(b.Appends) > 0 && len(b.Invalidations) > 0 {
					return s.Apply(ctx, store.Batch{Appends: b.Appends})
				}
				return err
			})},
		{"acknowledges a status change it drops", []string{"Invalidate"},
			[]string{"a status change moves ACTIVE to INVALIDATED"},
			applying(func(ctx context.Context, s store.Store, b store.Batch) error {
				if loneChange(b) {
					return nil
				}
				return s.Apply(ctx, b)
			})},
		{"acknowledges appends it drops", []string{"ConcurrentAppends"},
			[]string{"every append must land"},
			applying(func(ctx context.Context, s store.Store, b store.Batch) error {
				if loneAppend(b) && appends.Add(1)%5 == 0 {
					return nil
				}
				return s.Apply(ctx, b)
			})},
		{"lands the rest of a batch that lost a raced id", []string{"ConcurrentDuplicate"},
			[]string{"a losing batch lands nothing"},
			applying(func(ctx context.Context, s store.Store, b store.Batch) error {
				err := s.Apply(ctx, b)
				if errors.Is(err, store.ErrDuplicateID) {
					for _, r := range b.Appends {
						_ = appendOne(ctx, s, r) // the raced id is refused again
					}
				}
				return err
			})},
		{"ignores a cancelled context", []string{"CancelledContext"},
			[]string{"Apply of one record", "Apply of one status change", "changes nothing"},
			applying(func(ctx context.Context, s store.Store, b store.Batch) error {
				if lone(b) {
					ctx = context.WithoutCancel(ctx)
				}
				return s.Apply(ctx, b)
			})},
		{"accepts writes after Close", []string{"Closed"},
			[]string{"after Close every method returns ErrClosed: Apply of one record", "after Close every method returns ErrClosed: Apply of one status change"},
			applying(swallow(lone, blackboard.ErrClosed))},
	}
}

// TestSuiteCatchesBrokenStores runs, for each way of breaking a contract,
// the cases that check it on a memory store broken that way, each in a
// helper process (a failing case would fail this test), and requires them
// to fail with the contract's words; on the memory store unbroken, the
// same cases must pass.
func TestSuiteCatchesBrokenStores(t *testing.T) {
	if os.Getenv(brokenEnv) != "" {
		t.Skip("a helper process runs TestBrokenStoreHelper only")
	}
	for _, b := range brokenStores() {
		t.Run(b.name, func(t *testing.T) {
			for _, c := range b.cases {
				run := caseNamed(t, c)
				t.Run("unbroken/"+c, func(t *testing.T) {
					run(t, func(*testing.T) store.Store { return memstore.New() })
				})
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenStoreHelper$", "-test.count=1")
			cmd.Env = append(os.Environ(), brokenEnv+"="+b.name)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("the suite passed a store that %s (error %v):\n%s", b.name, err, out)
			}
			for _, w := range b.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("the suite's failure on a store that %s does not say %q:\n%s", b.name, w, out)
				}
			}
		})
	}
}

// TestBrokenStoreHelper is the helper process of
// TestSuiteCatchesBrokenStores: it runs the cases of the broken store
// brokenEnv names, and skips when run on its own.
func TestBrokenStoreHelper(t *testing.T) {
	name := os.Getenv(brokenEnv)
	if name == "" {
		t.Skip("run by TestSuiteCatchesBrokenStores")
	}
	i := slices.IndexFunc(brokenStores(), func(b broken) bool { return b.name == name })
	if i < 0 {
		t.Fatalf("no broken store %q", name)
	}
	b := brokenStores()[i]
	for _, c := range b.cases {
		run := caseNamed(t, c)
		t.Run(c, func(t *testing.T) {
			run(t, func(*testing.T) store.Store { return b.open() })
		})
	}
}

// caseNamed returns the suite's case of that name, as [Run] runs it on
// the stores newStore returns.
func caseNamed(t *testing.T, name string) func(t *testing.T, newStore func(*testing.T) store.Store) {
	t.Helper()
	for _, c := range cases() {
		if c.name == name {
			return func(t *testing.T, newStore func(*testing.T) store.Store) { c.run(t, open(t, newStore)) }
		}
	}
	t.Fatalf("no case %q", name)
	return nil
}
