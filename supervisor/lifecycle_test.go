package supervisor_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/sqlitestore"
	"github.com/blackboardkernel/bk/supervisor"
)

// clock is a kernel clock the test moves by hand: the gates' leases and
// the supervisor's schedule read it, so nothing waits on wall time.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Recovered returns once the first pass after the lease of a crashed
// process ran out (on the kernel's clock) has finished its attempt, and
// not before: with the clock stopped, the supervisor resumes approvals but
// leaves the crashed attempt to its lease, and Recovered waits; once the
// clock passes the lease, a Wake brings the full pass, which re-drives
// the attempt and reports it before Recovered returns.
func TestRecoveredWaitsForTheLease(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bk.db")
	w := newWorld()
	ctx := context.Background()
	clk := &clock{now: time.UnixMilli(1_700_000_000_000)}
	const lease = time.Minute // never passed on the wall clock while the test runs
	dead := processWithLease(t, openStore(t, path), w, lease, clk.Now)
	ground(t, dead, "crash", "O1")
	cctx, cancel := context.WithCancel(ctx)
	w.mu.Lock()
	w.crash["O1"] = cancel
	w.mu.Unlock()
	crashed := call(cctx, t, dead, "crash", "issue_refund", "O1", 10)
	ground(t, dead, "approve", "O2")
	waiting := call(ctx, t, dead, "approve", "issue_refund", "O2", 700)

	g := processWithLease(t, openStore(t, path), w, lease, clk.Now)
	ev := start(t, g, supervisor.Config{Interval: time.Hour, RecoverEvery: time.Hour})
	if _, err := g.Approver("human:alice").Decide(ctx, audit.Approval{TraceID: "approve", ActionID: waiting.ActionID, Digest: waiting.ArgsDigest, Decision: audit.Approved, Note: "ok"}); err != nil {
		t.Fatal(err)
	}
	ev.sup.Wake()
	if got := ev.wait(t, 1); got[waiting.ActionID].Result.Outcome != audit.OutcomeExecuted {
		t.Fatalf("approved action: %+v, want it executed", got)
	}
	// The supervisor's first pass and a look have run; the crashed
	// attempt's lease has not run out on the kernel's clock.
	done, stop := context.WithCancel(ctx)
	stop()
	if err := ev.sup.Recovered(done); !errors.Is(err, context.Canceled) {
		t.Errorf("Recovered before the lease ran out: %v, want it still waiting", err)
	}
	if n := w.count(crashed.ActionID); n != 1 {
		t.Errorf("the crashed attempt was started %d times within its lease, want 1", n)
	}

	clk.advance(2 * lease)
	ev.sup.Wake()
	ev.recovered(t)
	select {
	case e := <-ev.ch:
		if e.ActionID != crashed.ActionID || e.Op != supervisor.OpRecover || e.Result.Code != reason.EffectSucceeded {
			t.Errorf("event %+v, want the crashed refund recovered", e)
		}
	default:
		t.Error("Recovered returned before the recovered refund was reported")
	}
	if n := w.count(crashed.ActionID); n != 2 {
		t.Errorf("the crashed attempt was started %d times, want 2 (re-driven once with its key)", n)
	}
	if err := ev.sup.Recovered(done); err != nil {
		t.Errorf("Recovered after the pass, with a done context: %v, want nil", err)
	}
}

// Close stops the supervisor and waits: when it returns, the effect the
// supervisor was running has returned (its context ended with the
// supervisor's), and Recovered says the supervisor is not running. A
// supervisor whose context ends stops the same way.
func TestCloseWaitsForTheEffect(t *testing.T) {
	w := newWorld()
	w.hold = make(chan string, 1)
	g := processWithLease(t, openStore(t, filepath.Join(t.TempDir(), "bk.db")), w, time.Minute, nil)
	ctx := context.Background()
	for i, viaContext := range []bool{false, true} {
		trace, order := fmt.Sprintf("t%d", i), fmt.Sprintf("A%d", i)
		ground(t, g, trace, order)
		res := call(ctx, t, g, trace, "issue_refund", order, 700)
		if _, err := g.Approver("human:alice").Decide(ctx, audit.Approval{TraceID: trace, ActionID: res.ActionID, Digest: res.ArgsDigest, Decision: audit.Approved, Note: "ok"}); err != nil {
			t.Fatal(err)
		}
		sup, err := supervisor.New(g, supervisor.Config{Interval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		runCtx, cancel := context.WithCancel(ctx)
		if err := sup.Start(runCtx); err != nil {
			t.Fatal(err)
		}
		sup.Wake()
		if id := <-w.hold; id != res.ActionID {
			t.Fatalf("effect of %s, want %s", id, res.ActionID)
		}
		before := w.left.Load()
		if viaContext {
			cancel()
		}
		if err := sup.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		cancel()
		if w.left.Load() != before+1 {
			t.Errorf("context ended: %v: Close returned while the effect ran", viaContext)
		}
		if err := sup.Recovered(ctx); !errors.Is(err, supervisor.ErrNotRunning) {
			t.Errorf("Recovered after Close: %v, want ErrNotRunning", err)
		}
	}
}

// The documented shutdown closes the supervisor, then the gate, then the
// store the caller opened (deferred in the opposite order): a copy of the
// SQLite file made afterwards, without its -wal file, holds every record.
func TestShutdownLeavesTheRecordsInTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bk.db")
	ctx := context.Background()
	var want []string // the trace's records, as the store read them before the shutdown
	func() {
		s, err := sqlitestore.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		g := process(t, s, newWorld())
		defer g.Close()
		sup, err := supervisor.New(g, supervisor.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if err := sup.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer sup.Close()
		ground(t, g, "t", "A1")
		res := call(ctx, t, g, "t", "issue_refund", "A1", 10)
		if res.Outcome != audit.OutcomeExecuted {
			t.Fatalf("refund: %+v", res)
		}
		want = traceRecords(t, s)
	}()
	copied := filepath.Join(dir, "copy.db")
	if err := copyFile(copied, path); err != nil {
		t.Fatal(err)
	}
	s, err := sqlitestore.Open(ctx, copied)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := traceRecords(t, s); len(want) < 4 || !slices.Equal(got, want) {
		t.Errorf("the copy holds %d records of the trace: %v; want the %d written: %v", len(got), got, len(want), want)
	}
}

// traceRecords returns the ids of the records of trace "t" in s.
func traceRecords(t *testing.T, s store.Store) []string {
	t.Helper()
	var ids []string
	for rec, err := range s.ListTrace(context.Background(), blackboard.DefaultNamespace, "t") {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rec.ID)
	}
	return ids
}

// copyFile copies the file src, alone, to dst.
func copyFile(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}
