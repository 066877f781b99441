package toolgate_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/toolgate"
)

// slowStore is a memory store whose first write of an effect attempt
// waits before it lands, as a write behind a SQLite lock or a slow
// PostgreSQL round trip does.
type slowStore struct {
	store.Store // an interface, so that only the Store's methods are promoted
	delay       time.Duration
	taken       atomic.Bool
}

func (s *slowStore) Apply(ctx context.Context, b store.Batch) error {
	for _, r := range b.Appends {
		if r.Kind == audit.KindAttempt && s.taken.CompareAndSwap(false, true) {
			time.Sleep(s.delay)
		}
	}
	return s.Store.Apply(ctx, b)
}

// effectLog watches the effect of one tool across drivers.
type effectLog struct {
	mu        sync.Mutex
	live      int // effects running with a live context
	overlaps  int // effects started while another was live
	dead      int // effects started with a context already done
	succeeded int
}

// slowGate is a gate over a slow store with one read-only tool, "ping",
// on the kernel's own clock. The first attempt of an action blocks until
// its context ends; any later one succeeds at once.
func slowGate(t *testing.T, lease, delay time.Duration, log *effectLog, started chan<- string) *toolgate.Gate {
	t.Helper()
	ping := toolgate.Tool{Unscoped: true, Name: "ping", Result: "pong",
		Retry: toolgate.RetryPolicy{MaxAttempts: 5, Backoff: time.Millisecond},
		Effect: func(ctx context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
			log.mu.Lock()
			if ctx.Err() != nil {
				log.dead++
				log.mu.Unlock()
				return nil, toolgate.Retryable(ctx.Err())
			}
			if log.live > 0 {
				log.overlaps++
			}
			log.live++
			log.mu.Unlock()
			defer func() {
				log.mu.Lock()
				log.live--
				log.mu.Unlock()
			}()
			if inv.Attempt == 1 {
				select {
				case started <- inv.ActionID:
				default:
				}
				<-ctx.Done() // an effect that runs until it loses its context
				return nil, toolgate.Retryable(ctx.Err())
			}
			log.mu.Lock()
			log.succeeded++
			log.mu.Unlock()
			return blackboard.Payload{"ok": true}, nil
		}}
	s := &slowStore{Store: memstore.New(), delay: delay}
	g, err := toolgate.New(context.Background(), toolgate.Config{
		Kernel:    kernel.Config{Store: s},
		Tools:     []toolgate.Tool{ping},
		Lease:     lease,
		Contracts: map[string][]string{"ops": {"ping"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// TestAttackLeaseSlowStore: the first attempt's write takes 60% of a 2 s
// lease. A second driver (Execute, as another process would) waits for
// the attempt's lease and then starts attempt 2. The first effect must
// have lost its context by then: the effects never run at the same time
// with live contexts, and the action succeeds once.
func TestAttackLeaseSlowStore(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a lease")
	}
	var log effectLog
	started := make(chan string, 1)
	g := slowGate(t, 2*time.Second, 1200*time.Millisecond, &log, started)
	ctx := context.Background()
	var wg sync.WaitGroup
	var first toolgate.Result
	var firstErr error
	wg.Go(func() {
		first, firstErr = g.Call(ctx, toolgate.Call{Tool: "ping", Caller: "ops", TraceID: "slow-1", Args: json.RawMessage(`{}`)})
	})
	actionID := <-started
	second, err := g.Execute(ctx, actionID) // the second driver
	wg.Wait()
	if err != nil || firstErr != nil {
		t.Fatalf("Execute: %v; Call: %v", err, firstErr)
	}
	for _, res := range []toolgate.Result{first, second} {
		if res.Outcome != audit.OutcomeExecuted || res.ActionID != actionID {
			t.Errorf("result %+v, want the action executed", res)
		}
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if log.overlaps != 0 {
		t.Errorf("%d effects started while another attempt's effect still had a live context", log.overlaps)
	}
	if log.succeeded != 1 {
		t.Errorf("the effect succeeded %d times, want once", log.succeeded)
	}
}

// TestAttackLeaseLeftTooShort: the first attempt's write takes longer
// than the lease leaves room for. Its effect is not started (no effect
// ever gets a context that is already over); the next attempt runs it.
func TestAttackLeaseLeftTooShort(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a lease")
	}
	var log effectLog
	g := slowGate(t, time.Second, 1100*time.Millisecond, &log, nil)
	res, err := g.Call(context.Background(), toolgate.Call{Tool: "ping", Caller: "ops", TraceID: "slow-2", Args: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != audit.OutcomeExecuted {
		t.Errorf("result %+v, want executed by a later attempt", res)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if log.dead != 0 {
		t.Errorf("%d effects were started with a context already over", log.dead)
	}
	if log.succeeded != 1 {
		t.Errorf("the effect succeeded %d times, want once", log.succeeded)
	}
}
