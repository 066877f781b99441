//go:build unix

package toolgate_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/kernelhook"
	"github.com/blackboardkernel/bk/invariant"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/sqlitestore"
	"github.com/blackboardkernel/bk/toolgate"
)

// TestCrashRecovery kills processes that drive the gate over one SQLite
// file, at random points, and checks what exactly once means here once the
// work is done.
//
// The parent starts a child process (this test binary, re-executed with
// BK_CRASH_CHILD set) and starts it again each time it dies, until a child
// finishes the work: a few hundred (BK_CRASH_EFFECTS) refunds and credits on
// distinct orders, each in its own trace: look the order up, commit the
// belief refund_due, call the tool; a third of the calls are credits, whose
// idempotency key is the action's id, the rest refunds, keyed by the
// once-key on order_id; one in five is over 500 and waits for an approval
// the child gives before it executes the action. Every child waits one lease
// and calls Gate.Recover before any work. Each child dies by SIGKILL, sent
// to itself: either at a numbered checkpoint chosen from the seed (before
// and after the effect logs its start, after the money moved, after it logs
// done, after the gate returned a result and before the child logs it,
// between the steps of a call), or after a random delay, wherever it then is
// (inside a store write too).
//
// The fake effect appends to an effect log, with O_APPEND|O_SYNC, one line
// per event: "start KEY N" before it does anything, "paid KEY" when it moves
// money, "replay KEY" when its payment API (the effect itself, idempotent by
// key) finds the key paid and moves nothing, "done KEY N" after, or "fail KEY
// N" for a transient failure (one attempt in ten, marked Retryable). The
// child appends "boot L" when it starts and "result KEY OUTCOME" after the
// gate returns the result of an action.
//
// Exactly once, from the store's point of view, is what is checked:
//
//   - every action the kernel committed (each was allowed to run: the
//     child approves what waits) has exactly one recorded result, success
//     or failure, under its key;
//   - an effect is never started for a key whose result is recorded: no
//     "start KEY" after a "result KEY";
//   - an attempt number is started once per key, and a key is started
//     again only after its previous attempt failed with a retryable error
//     or its process died ("boot" between the two starts): so the effect
//     function ran twice for one key only after a crash between its effect
//     and its result record (toolgate's doc: the gate calls it again, with
//     the same key);
//   - "done KEY" appears more than once only with a crash between them, and
//     a success's recorded attempt is the one whose "done" the log shows;
//   - the money moved exactly once per key with a recorded success ("paid"
//     once), at most once for a recorded failure, never for another key;
//   - every decision record is there: one commit decision per committed
//     action, one per result record, one per refused proposal, and none
//     about a record that does not exist.
//
// By default it does two runs of 40 effects, aiming at two kills each; BK_CRASH_RUNS, BK_CRASH_EFFECTS,
// BK_CRASH_KILLS (kills aimed at per run) and BK_CRASH_SEED scale it up:
//
//	BK_CRASH_RUNS=20 BK_CRASH_EFFECTS=300 BK_CRASH_KILLS=12 go test -run TestCrashRecovery -v ./toolgate
func TestCrashRecovery(t *testing.T) {
	if dir := os.Getenv("BK_CRASH_CHILD"); dir != "" {
		crashChild(t, dir)
		return
	}
	runs := envInt(t, "BK_CRASH_RUNS", 2)
	effects := envInt(t, "BK_CRASH_EFFECTS", 40)
	kills := envInt(t, "BK_CRASH_KILLS", 2)
	seed := envInt(t, "BK_CRASH_SEED", 1)
	var total crashStats
	for r := range runs {
		s := crashRun(t, int64(seed+r), effects, kills)
		t.Logf("run %d (seed %d): %s", r+1, seed+r, s)
		total.add(s)
		if t.Failed() {
			break
		}
	}
	t.Logf("%d runs: %s", runs, total)
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a number", name, v)
	}
	return n
}

// crashStats are the figures of one or more runs.
type crashStats struct {
	lives, kills, timerKills int
	effects, starts          int // effect actions; effect starts
	retries, replays         int // starts after a retryable failure; payments found already made
	recovered                int // results Gate.Recover drove
	violations               int
	torn                     int            // effect log lines a kill cut short
	at                       map[string]int // checkpoint kills by place
}

func (s *crashStats) add(o crashStats) {
	s.lives += o.lives
	s.kills += o.kills
	s.timerKills += o.timerKills
	s.effects += o.effects
	s.starts += o.starts
	s.retries += o.retries
	s.replays += o.replays
	s.recovered += o.recovered
	s.violations += o.violations
	s.torn += o.torn
	for where, n := range o.at {
		if s.at == nil {
			s.at = map[string]int{}
		}
		s.at[where] += n
	}
}

func (s crashStats) String() string {
	places := slices.Sorted(maps.Keys(s.at))
	for i, p := range places {
		places[i] = fmt.Sprintf("%s: %d", p, s.at[p])
	}
	return fmt.Sprintf("%d processes, %d killed (%d by timer, %d at checkpoints [%s]), %d effects, %d effect starts "+
		"(%d after a retryable failure, %d re-runs whose payment the key absorbed), %d results driven by Recover, %d torn log lines, %d violations",
		s.lives, s.kills, s.timerKills, s.kills-s.timerKills, strings.Join(places, "; "), s.effects, s.starts, s.retries, s.replays,
		s.recovered, s.torn, s.violations)
}

// The child's configuration.
const (
	crashLease  = 100 * time.Millisecond
	crashCheck  = "human:checker"
	crashFinish = "CRASH-CHILD FINISHED"
)

// crashRun drives one run to completion in child processes and checks it.
func crashRun(t *testing.T, seed int64, effects, kills int) crashStats {
	t.Helper()
	dir := t.TempDir()
	var st crashStats
	maxLives := 20*max(kills, 1) + 20
	for life := 1; ; life++ {
		if life > maxLives {
			t.Fatalf("seed %d: no end after %d processes", seed, maxLives)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashRecovery$", "-test.v")
		cmd.Env = append(os.Environ(), "BK_CRASH_CHILD="+dir, fmt.Sprintf("BK_CRASH_LIFE=%d", life),
			fmt.Sprintf("BK_CRASH_SEED=%d", seed), fmt.Sprintf("BK_CRASH_EFFECTS=%d", effects), fmt.Sprintf("BK_CRASH_KILLS=%d", kills),
			// A race-enabled binary sleeps a second before it exits, unless told not to.
			"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
		out, err := cmd.CombinedOutput()
		st.lives++
		st.recovered += strings.Count(string(out), "recovered ")
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
				st.kills++
				if strings.Contains(string(out), "kill: timer") {
					st.timerKills++
				}
				if _, where, ok := strings.Cut(string(out), "kill: checkpoint "); ok {
					_, where, _ = strings.Cut(where, ", ")
					where, _, _ = strings.Cut(where, "\n")
					if st.at == nil {
						st.at = map[string]int{}
					}
					st.at[where]++
				}
				continue
			}
		}
		if err != nil || !strings.Contains(string(out), crashFinish) {
			t.Fatalf("seed %d, process %d: %v\n%s", seed, life, err, out)
		}
		break
	}
	checkCrashRun(t, dir, seed, effects, &st)
	return st
}

// work is one call the child makes: its trace, tool and arguments.
type work struct {
	trace, tool, order string
	amount             float64
}

func crashWork(n int) []work {
	out := make([]work, n)
	for i := range out {
		w := work{trace: fmt.Sprintf("w%04d", i), tool: "issue_refund", order: fmt.Sprintf("O%04d", i), amount: float64(10 + i%50)}
		if i%3 == 0 {
			w.tool = "issue_credit"
		}
		if i%5 == 0 {
			w.amount = float64(600 + i)
		}
		out[i] = w
	}
	return out
}

// orderBound binds a payment to the order its belief rests on: that
// order, at most its amount.
var orderBound = []toolgate.Binding{
	{Arg: "order_id", Percept: "order", Op: "equal"},
	{Arg: "amount", Percept: "order", Op: "at_most"},
}

// crashTools are the gate's tools; effect runs both paying tools.
func crashTools(effect toolgate.EffectFunc) []toolgate.Tool {
	pay := json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"},"amount":{"type":"number"}},"required":["order_id","amount"],"additionalProperties":false}`)
	retry := toolgate.RetryPolicy{MaxAttempts: 12, Backoff: time.Millisecond}
	return []toolgate.Tool{
		{Unscoped: true, Name: "lookup_order", Parameters: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"}},"required":["order_id"]}`),
			Result: "order", Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
				return blackboard.Payload{"order_id": inv.Args["order_id"], "amount": 2000.0}, nil
			}},
		{Unscoped: true, Name: "issue_refund", Parameters: pay, Requires: []string{"refund_due"}, Bindings: orderBound, Result: "refund",
			Approval: "amount > 500", Retry: retry, Effect: effect},
		{Unscoped: true, Name: "issue_credit", Parameters: pay, Requires: []string{"refund_due"}, Bindings: orderBound, Result: "credit", Idempotent: true,
			Approval: "amount > 500", Retry: retry, Effect: effect},
	}
}

// crashDesk opens the kernel and the gate over the run's database.
func crashDesk(t *testing.T, dir string, effect toolgate.EffectFunc) (*sqlitestore.Store, *kernel.Kernel, *toolgate.Gate) {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), filepath.Join(dir, "bk.db"))
	if err != nil {
		t.Fatal(err)
	}
	tools := crashTools(effect)
	for i := range tools {
		if tools[i].Name == "issue_refund" {
			tools[i].Once = &kernel.OnceKey{Fields: []string{"order_id"}}
		}
	}
	g, err := toolgate.New(context.Background(), toolgate.Config{
		Kernel: kernel.Config{
			Store:       s,
			BeliefSpecs: []kernel.BeliefSpec{{Kind: "refund_due", DependsOn: []string{"order"}}},
		},
		Tools:     tools,
		Lease:     crashLease,
		Contracts: map[string][]string{"support": {"lookup_order", "issue_refund", "issue_credit"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return s, g.Kernel(), g
}

// draw is a number in [0, 1) fixed by its arguments, the same in every
// process.
func draw(a ...any) float64 {
	sum := sha256.Sum256([]byte(fmt.Sprint(a...)))
	return float64(binary.BigEndian.Uint64(sum[:8])>>11) / (1 << 53)
}

// crashChildState is what one life of the child keeps.
type crashChildState struct {
	t      *testing.T
	log    *os.File
	paid   map[string]bool // the payment API's ledger, from the log
	seed   int64
	killAt int // the checkpoint to die at; 0: none
	points int
}

// crashChild is one life of the child: it waits a lease, recovers, then
// does the work no earlier life finished, and dies where its seed says.
func crashChild(t *testing.T, dir string) {
	life, _ := strconv.Atoi(os.Getenv("BK_CRASH_LIFE"))
	seed, _ := strconv.ParseInt(os.Getenv("BK_CRASH_SEED"), 10, 64)
	effects, _ := strconv.Atoi(os.Getenv("BK_CRASH_EFFECTS"))
	kills, _ := strconv.Atoi(os.Getenv("BK_CRASH_KILLS"))
	logPath := filepath.Join(dir, "effects.log")

	// What earlier lives did: the payments made and the work finished.
	c := &crashChildState{t: t, paid: map[string]bool{}, seed: seed}
	finished := map[int]bool{}
	if f, err := os.Open(logPath); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			switch {
			case len(fields) == 2 && fields[0] == "paid":
				c.paid[fields[1]] = true
			case len(fields) == 2 && fields[0] == "finished":
				n, _ := strconv.Atoi(fields[1])
				finished[n] = true
			}
		}
		f.Close()
	}
	var err error
	c.log, err = os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_SYNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	c.write("\nboot %d", life) // the newline ends a line a kill may have torn

	rng := rand.New(rand.NewPCG(uint64(seed), uint64(life)))
	span := max(1, 8*effects/max(kills, 1)) // about 8 checkpoints per piece of work
	timer := rng.Float64() < 0.4
	if !timer {
		c.killAt = 1 + rng.IntN(2*span)
		fmt.Printf("life %d: kill at checkpoint %d\n", life, c.killAt)
	}

	s, k, g := crashDesk(t, dir, c.effect)
	defer s.Close()
	ctx := context.Background()
	time.Sleep(crashLease + crashLease/10 + 10*time.Millisecond) // the attempts of the dead are free (lease and margin)
	results, err := g.Recover(ctx)
	if err != nil {
		t.Fatalf("Recover: %v", err)
	}
	for _, res := range results {
		fmt.Printf("recovered %s: %s %s\n", res.ActionID, res.Outcome, res.Code)
	}
	planner, approver := k.Proposer(blackboard.RolePlanner, "analyst"), g.Approver(crashCheck)
	for i, w := range crashWork(effects) {
		if finished[i] {
			continue
		}
		began := time.Now()
		c.item(ctx, k, g, planner, approver, w)
		c.write("finished %d", i)
		if timer {
			// Armed once the first piece of work shows how fast this
			// machine is: about effects/kills pieces of work from now.
			timer = false
			d := time.Duration(rng.Int64N(2 * int64(time.Since(began)) * int64(effects) / int64(max(kills, 1))))
			fmt.Printf("life %d: kill: timer after %v\n", life, d)
			time.AfterFunc(d, func() { syscall.Kill(os.Getpid(), syscall.SIGKILL) })
		}
	}
	fmt.Println(crashFinish)
}

// write appends a line to the effect log, in one write.
func (c *crashChildState) write(format string, a ...any) {
	if _, err := c.log.Write([]byte(fmt.Sprintf(format, a...) + "\n")); err != nil {
		c.t.Fatal(err)
	}
}

// point is a checkpoint: the child dies here when its seed chose it.
func (c *crashChildState) point(where string) {
	c.points++
	if c.points == c.killAt {
		fmt.Printf("kill: checkpoint %d, %s\n", c.points, where)
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
}

// effect is both paying tools' effect: logged, transiently failing one
// attempt in ten, idempotent by key.
func (c *crashChildState) effect(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
	c.point("attempt persisted, effect not started")
	c.write("start %s %d", inv.Key, inv.Attempt)
	c.point("effect started")
	if draw(c.seed, inv.Key, inv.Attempt) < 0.1 {
		c.write("fail %s %d", inv.Key, inv.Attempt)
		return nil, toolgate.Retryable(errors.New("503"))
	}
	if c.paid[inv.Key] {
		c.write("replay %s", inv.Key)
	} else {
		c.write("paid %s", inv.Key)
		c.paid[inv.Key] = true
	}
	c.point("money moved")
	c.write("done %s %d", inv.Key, inv.Attempt)
	c.point("effect done, result not recorded")
	return blackboard.Payload{"paid": inv.Args["amount"]}, nil
}

// item does one piece of work, or what of it is left.
func (c *crashChildState) item(ctx context.Context, k *kernel.Kernel, g *toolgate.Gate, planner *kernel.Proposer, approver *toolgate.Approver, w work) {
	t := c.t
	actionID := ""
	for d, err := range audit.List(ctx, g.Kernel().Reader(), audit.Query{TraceID: w.trace, Tool: w.tool}) {
		if err != nil {
			t.Fatal(err)
		}
		if d.Kind == w.tool && (d.Outcome == audit.OutcomeCommitted || d.Outcome == audit.OutcomePendingApproval) {
			actionID = d.Subject
		}
	}
	var res toolgate.Result
	if actionID == "" {
		call := func(tool string, args any) toolgate.Result {
			b, _ := json.Marshal(args)
			res, err := g.Call(ctx, toolgate.Call{Tool: tool, Args: b, Caller: "support", TraceID: w.trace})
			if err != nil {
				t.Fatalf("%s %s: %v", w.trace, tool, err)
			}
			return res
		}
		if res := call("lookup_order", map[string]any{"order_id": w.order}); res.Outcome != audit.OutcomeExecuted {
			t.Fatalf("%s lookup: %+v", w.trace, res)
		}
		c.point("looked up")
		d, err := planner.Submit(ctx, kernel.Entry{TraceID: w.trace, Slot: blackboard.Beliefs, Kind: "refund_due",
			Payload: blackboard.Payload{"value": true, "depends_on": []string{"order"}}})
		if err != nil || !d.Committed() {
			t.Fatalf("%s belief: %v %v", w.trace, d.Code, err)
		}
		c.point("belief committed")
		res = call(w.tool, map[string]any{"order_id": w.order, "amount": w.amount})
		c.point("Call returned, result not logged")
		if res.Outcome == audit.OutcomeRefused {
			t.Fatalf("%s %s refused: %+v", w.trace, w.tool, res)
		}
		actionID = res.ActionID
	}
	if res.Outcome == "" || res.Outcome == audit.OutcomePendingApproval {
		pending, err := g.Pending(ctx, w.trace)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pending {
			if p.Decision == nil {
				if _, err := approver.Decide(ctx, audit.Approval{TraceID: w.trace, ActionID: p.ActionID, Digest: p.Digest, Decision: audit.Approved, Note: "ok"}); err != nil {
					t.Fatal(err)
				}
				c.point("approved")
			}
		}
		if res, err = g.Execute(ctx, actionID); err != nil {
			t.Fatalf("%s Execute: %v", w.trace, err)
		}
		c.point("Execute returned, result not logged")
	}
	if res.Outcome != audit.OutcomeExecuted && res.Outcome != audit.OutcomeFailed {
		t.Fatalf("%s: %+v", w.trace, res)
	}
	key := kernelhook.Namespace(k) + "/" + actionID
	if w.tool == "issue_refund" {
		var err error
		if key, err = k.Governor().OnceKeyOf(ctx, actionID); err != nil {
			t.Fatal(err)
		}
	}
	c.write("result %s %s", key, res.Outcome)
}

// logEvent is one line of the effect log.
type logEvent struct {
	kind, key string
	attempt   int
	life      int // the life that wrote it
	pos       int
}

// checkCrashRun checks a finished run: the store against the effect log.
func checkCrashRun(t *testing.T, dir string, seed int64, effects int, st *crashStats) {
	t.Helper()
	bad := func(format string, a ...any) {
		st.violations++
		t.Errorf("seed %d: "+format, append([]any{seed}, a...)...)
	}

	// The effect log.
	data, err := os.ReadFile(filepath.Join(dir, "effects.log"))
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string][]logEvent{}
	life, torn := 0, 0
	for pos, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		ev := logEvent{kind: f[0], life: life, pos: pos}
		switch {
		case f[0] == "boot" && len(f) == 2:
			life, _ = strconv.Atoi(f[1])
			continue
		case f[0] == "finished" && len(f) == 2:
			continue
		case (f[0] == "start" || f[0] == "done" || f[0] == "fail") && len(f) == 3:
			ev.key = f[1]
			ev.attempt, err = strconv.Atoi(f[2])
		case (f[0] == "paid" || f[0] == "replay") && len(f) == 2:
			ev.key = f[1]
		case f[0] == "result" && len(f) == 3:
			ev.key = f[1]
		default:
			err = errors.New("unknown line")
		}
		if err != nil {
			torn++
			t.Logf("seed %d: effect log line %d %q: %v", seed, pos, line, err)
			err = nil
			continue
		}
		byKey[ev.key] = append(byKey[ev.key], ev)
	}

	// The store.
	s, k, _ := crashDesk(t, dir, func(context.Context, toolgate.Invocation) (blackboard.Payload, error) {
		return nil, errors.New("the checker runs no effect")
	})
	defer s.Close()
	ctx := context.Background()
	// What the kernel and the gate promise, the hash chains included,
	// after every kill and recovery.
	vs, err := invariant.Check(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		bad("%v", v)
	}
	recs := map[string]blackboard.Record{}
	var actions, results, refused []blackboard.Record
	for _, slot := range blackboard.AllSlots() {
		for r, err := range s.ListSlot(ctx, slot, store.Filter{}) {
			if err != nil {
				t.Fatal(err)
			}
			recs[r.ID] = r
			switch {
			case r.Slot == blackboard.Actions && r.Mode == blackboard.ModeCommit:
				actions = append(actions, r)
			case r.Slot == blackboard.Actions && r.Mode == blackboard.ModePropose && r.Status == blackboard.StatusInvalidated && r.Reason != reason.SupersededByCommit:
				refused = append(refused, r)
			case r.Kind != audit.KindAttempt && isEffect(r):
				results = append(results, r)
			}
		}
	}
	decisions := map[string][]audit.Entry{} // by subject
	for d, err := range audit.List(ctx, k.Reader(), audit.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		if d.Subject == "" {
			bad("decision %s (%s %s) names no record", d.ID, d.Outcome, d.Code)
			continue
		}
		if _, ok := recs[d.Subject]; !ok {
			bad("decision %s is about %s, which is not in the store", d.ID, d.Subject)
		}
		decisions[d.Subject] = append(decisions[d.Subject], d)
	}
	resultsOf := map[string][]blackboard.Record{}
	for _, r := range results {
		eff, _ := audit.EffectOf(r)
		id := eff.ActionID
		resultsOf[id] = append(resultsOf[id], r)
		ds := decisions[r.ID]
		if len(ds) != 1 || (ds[0].Outcome != audit.OutcomeExecuted && ds[0].Outcome != audit.OutcomeFailed) {
			bad("result %s has decisions %+v, want one executed or failed", r.ID, ds)
		}
	}
	for _, r := range refused {
		if ds := decisions[r.ID]; len(ds) != 1 || ds[0].Outcome != audit.OutcomeRefused {
			bad("refused proposal %s has decisions %+v", r.ID, ds)
		}
	}

	// Every committed action: one commit decision, one result; for the
	// paying tools, the effect log agrees.
	perTrace := map[string]int{}
	for _, a := range actions {
		ds := decisions[a.ID]
		if len(ds) != 1 || (ds[0].Outcome != audit.OutcomeCommitted && ds[0].Outcome != audit.OutcomePendingApproval) {
			bad("action %s has commit decisions %+v", a.ID, ds)
		}
		rs := resultsOf[a.ID]
		if len(rs) != 1 {
			bad("action %s (%s) has %d results, want 1", a.ID, a.Kind, len(rs))
			continue
		}
		if a.Kind == "lookup_order" {
			continue
		}
		st.effects++
		perTrace[a.Provenance.TraceID]++
		eff, _ := audit.EffectOf(rs[0])
		key, attempt := eff.Key, eff.Attempt
		want := kernelhook.Namespace(k) + "/" + a.ID
		if a.Kind == "issue_refund" {
			if want, err = k.Governor().OnceKeyOf(ctx, a.ID); err != nil {
				t.Fatal(err)
			}
		}
		if key != want {
			bad("action %s ran under key %q, want %q", a.ID, key, want)
		}
		checkKeyLog(bad, st, a.ID, key, eff.Status == audit.StatusSucceeded, attempt, byKey[key])
		delete(byKey, key)
	}
	for key, evs := range byKey {
		bad("the effect log has %d events for key %s, which no action has", len(evs), key)
	}
	for i, w := range crashWork(effects) {
		if perTrace[w.trace] != 1 {
			bad("work %d (%s) has %d committed %s actions, want 1", i, w.trace, perTrace[w.trace], w.tool)
		}
	}
	st.torn += torn
}

// checkKeyLog checks the effect log of one key against its recorded
// result: succeeded with attempt (or failed).
func checkKeyLog(bad func(string, ...any), st *crashStats, action, key string, succeeded bool, attempt int, evs []logEvent) {
	started := map[int]bool{}
	resultAt, paid := -1, 0
	var prevStart *logEvent
	failed := map[int]bool{}
	doneAttempts := []int{}
	for i := range evs {
		ev := evs[i]
		switch ev.kind {
		case "start":
			st.starts++
			if resultAt >= 0 {
				bad("%s: attempt %d started after the result was recorded", action, ev.attempt)
			}
			if started[ev.attempt] {
				bad("%s: attempt %d started twice", action, ev.attempt)
			}
			started[ev.attempt] = true
			if prevStart != nil {
				switch {
				case failed[prevStart.attempt]:
					st.retries++
				case ev.life == prevStart.life:
					bad("%s: attempt %d started in the life of attempt %d, which neither failed nor died", action, ev.attempt, prevStart.attempt)
				}
			}
			prevStart = &evs[i]
		case "fail":
			failed[ev.attempt] = true
		case "paid":
			paid++
		case "replay":
			st.replays++
		case "done":
			if n := len(doneAttempts); n > 0 {
				// A second run of the effect: only after the process of the
				// first died before recording it.
				last := evs[slices.IndexFunc(evs, func(e logEvent) bool { return e.kind == "done" && e.attempt == doneAttempts[n-1] })]
				if last.life == ev.life {
					bad("%s: done twice in one life (attempts %d and %d)", action, doneAttempts[n-1], ev.attempt)
				}
			}
			doneAttempts = append(doneAttempts, ev.attempt)
		case "result":
			if resultAt < 0 {
				resultAt = ev.pos
			}
		}
	}
	switch {
	case succeeded && paid != 1:
		bad("%s: succeeded, with %d payments", action, paid)
	case !succeeded && paid > 1:
		bad("%s: failed, with %d payments", action, paid)
	}
	if succeeded && (len(doneAttempts) == 0 || doneAttempts[len(doneAttempts)-1] != attempt) {
		bad("%s: recorded success of attempt %d, the log has done for %v", action, attempt, doneAttempts)
	}
	if succeeded && !started[attempt] {
		bad("%s: recorded success of attempt %d, which the log never started", action, attempt)
	}
	for a := range started {
		if a > attempt {
			bad("%s: attempt %d started, past the recorded attempt %d", action, a, attempt)
		}
	}
}

// isEffect reports whether r is a percept the gate wrote about an effect.
func isEffect(r blackboard.Record) bool {
	_, ok := audit.EffectOf(r)
	return ok
}
