package pgstore_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/blackboardkernel/bk/adaptive"
	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/ledger"
	"github.com/blackboardkernel/bk/internal/pgtest"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/pgstore"
	"github.com/blackboardkernel/bk/toolgate"
)

// The many-process test: the test binary runs itself as helper processes
// (the environment says which role, which schema and which effects file),
// all on one PostgreSQL schema.
const (
	procRoleEnv    = "BK_PGSTORE_PROC_ROLE" // "worker" or "learner"
	procIDEnv      = "BK_PGSTORE_PROC_ID"
	procSchemaEnv  = "BK_PGSTORE_PROC_SCHEMA"
	procEffectsEnv = "BK_PGSTORE_PROC_EFFECTS"
	procLedgerEnv  = "BK_PGSTORE_PROC_LEDGER" // schema of the gated refunds' ledger

	procWorkers    = 4  // worker processes
	procGoroutines = 2  // episode loops per worker
	procEpisodes   = 12 // episodes per loop
	procShared     = 2  // traces every loop writes to
	procCharges    = 3  // charges whose refund every loop submits
	procKilled     = "1"
	procKillAfter  = 12 // acknowledgements read from the victim before SIGKILL

	// The gated refund: a tool call through a toolgate.Gate on the same
	// store, once-keyed per charge.
	gateTool   = "gate_refund"
	gateResult = "gate_refund_receipt"
	// The lease is long enough that an attempt's write, in five processes
	// under the race detector on two cores, lands well inside it (at 300 ms
	// one such write once left less than the margin and the effect, rightly,
	// did not start); the restarted process waits it out once.
	gateLease = 2 * time.Second
)

// TestManyProcesses runs governed episodes from several processes on one
// PostgreSQL schema, on traces of their own and on traces they all write
// to, submitting the same once-keyed refunds from every process, and kills
// one process with SIGKILL while it runs (then starts it again). Every
// helper reports each result the moment the kernel returns it. Afterwards
// the test requires, from the database:
//
//   - exactly one committed refund per once-key, and at most one per charge;
//   - every record's id names its position in its trace (the kernel took
//     the trace's length, and the store's counter agreed, under
//     concurrency from every process), no gaps, no duplicate ids;
//   - no evidence artifact without the belief it justifies;
//   - every acknowledged write and decision present, as acknowledged;
//   - a decision record for every decision in the store;
//   - no refund effect run twice, though every process tries to run the
//     effect of every committed refund it finds (a claimed once-key per
//     effect attempt);
//   - through the tool gate (half the episodes also make a gated refund
//     call, the first ones for charges every process refunds): one committed
//     gated refund per once-key, each key in the ledger of the refund
//     provider exactly once, no attempt of an effect started twice, one
//     recorded result per committed tool action (the restarted worker
//     runs Gate.Recover first, which finishes what the kill left), and a
//     decision record for every gated call and every result;
//   - the adaptive learner, started afterwards in this process and then in
//     a second process, counts the failures of every process, the same,
//     and the second does not learn again what the first learned.
func TestManyProcesses(t *testing.T) {
	switch os.Getenv(procRoleEnv) {
	case "worker":
		procWorker(t)
		return
	case "learner":
		procLearner(t)
		return
	}
	if testing.Short() {
		t.Skip("starts several processes")
	}
	pgtest.DSN(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute) // a stuck helper is killed
	defer cancel()
	schema := pgtest.Schema(t)
	effects := t.TempDir() + "/effects"
	ledger := pgtest.Schema(t)
	createLedger(ctx, t, ledger)

	// The helpers open the store at once on a schema that does not exist
	// yet: they race to create it.
	var workers []*helper
	for i := range procWorkers {
		workers = append(workers, startHelper(ctx, t, "worker", strconv.Itoa(i), schema, effects, ledger))
	}
	for _, w := range workers {
		w.waitReady(t)
	}
	for _, w := range workers {
		_ = w.stdin.Close() // go
	}
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() {
			if w.id == procKilled {
				w.read(procKillAfter)
				_ = w.cmd.Process.Signal(syscall.SIGKILL)
			}
			w.read(-1)
		})
	}
	wg.Wait()
	for _, w := range workers {
		err := w.cmd.Wait()
		if w.id == procKilled {
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("worker %s was to be killed by SIGKILL, ended with %v after %d acknowledgements; stderr:\n%s",
					w.id, err, len(w.acks), w.stderr.String())
			}
			continue
		}
		if err != nil || !w.done {
			t.Fatalf("worker %s: %v (done %v); stderr:\n%s", w.id, err, w.done, w.stderr.String())
		}
	}
	// Started again, the killed worker's successor finds the store as the
	// kill left it (its transactions rolled back, its locks gone) and runs
	// its episodes to the end.
	again := startHelper(ctx, t, "worker", procKilled+"r", schema, effects, ledger)
	again.waitReady(t)
	_ = again.stdin.Close()
	again.read(-1)
	if err := again.cmd.Wait(); err != nil || !again.done {
		t.Fatalf("the restarted worker: %v; stderr:\n%s", err, again.stderr.String())
	}
	workers = append(workers, again)
	for _, w := range workers {
		for _, f := range w.failures {
			t.Errorf("worker %s: %s", w.id, f)
		}
	}
	if t.Failed() {
		return
	}
	checkProcesses(ctx, t, schema, effects, workers)
	checkGated(ctx, t, schema, ledger, workers)
}

// createLedger creates the tables of the refund provider the gated tool
// calls: the ledger, one row per idempotency key (a replay of a key
// returns the first refund and counts the replay), and every call of the
// effect, by key and attempt number (a second start of one attempt fails
// the insert).
func createLedger(ctx context.Context, t *testing.T, ledger string) {
	pool := pgtest.Pool(t)
	l := pgx.Identifier{ledger}.Sanitize()
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+l+
		"; CREATE TABLE "+l+".refunds (key text PRIMARY KEY, action text NOT NULL, charge text NOT NULL, worker text NOT NULL, replays int NOT NULL DEFAULT 0)"+
		"; CREATE TABLE "+l+".calls (key text, attempt int, action text NOT NULL, worker text NOT NULL, PRIMARY KEY (key, attempt))"); err != nil {
		t.Fatal(err)
	}
}

// helper is a running helper process and what it reported.
type helper struct {
	id       string
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	stdout   *bufio.Reader
	stderr   strings.Builder
	acks     [][]string // acknowledgements, split into fields
	failures []string
	done     bool
	out      []string // other lines
}

func startHelper(ctx context.Context, t *testing.T, role, id, schema, effects string, ledger ...string) *helper {
	t.Helper()
	h := &helper{id: id, cmd: exec.CommandContext(ctx, os.Args[0], "-test.run=^TestManyProcesses$", "-test.count=1")}
	h.cmd.Env = append(os.Environ(), procRoleEnv+"="+role, procIDEnv+"="+id, procSchemaEnv+"="+schema, procEffectsEnv+"="+effects)
	for _, l := range ledger {
		h.cmd.Env = append(h.cmd.Env, procLedgerEnv+"="+l)
	}
	h.cmd.Stderr = &lockedWriter{b: &h.stderr}
	var err error
	if h.stdin, err = h.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := h.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	h.stdout = bufio.NewReader(out)
	if err := h.cmd.Start(); err != nil {
		t.Fatalf("starting %s %s: %v", role, id, err)
	}
	t.Cleanup(func() { _ = h.cmd.Process.Kill(); _ = h.cmd.Wait() }) // after a failure below
	return h
}

// lockedWriter lets exec copy stderr while a failure message reads it.
type lockedWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (h *helper) waitReady(t *testing.T) {
	t.Helper()
	if line, err := h.stdout.ReadString('\n'); line != "ready\n" {
		t.Fatalf("helper %s did not get ready: %q, %v; stderr:\n%s", h.id, line, err, h.stderr.String())
	}
}

// read reads the helper's reports until n acknowledgements have come (n <
// 0: until the end of its output).
func (h *helper) read(n int) {
	for n < 0 || len(h.acks) < n {
		line, err := h.stdout.ReadString('\n')
		if err != nil {
			return
		}
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case f[0] == "ack":
			h.acks = append(h.acks, f[1:])
		case f[0] == "fail":
			h.failures = append(h.failures, strings.TrimSpace(line))
		case f[0] == "done":
			h.done = true
		default:
			h.out = append(h.out, strings.TrimSpace(line))
		}
	}
}

// openHelperStore opens the store as a helper process does, on a pool of
// its own.
func openHelperStore(ctx context.Context, schema string) (*pgstore.Store, error) {
	return pgstore.Open(ctx, os.Getenv(pgtest.EnvDSN), pgstore.WithSchema(schema))
}

// refundSpec makes a refund once-only per charge.
var refundSpec = kernel.ActionSpec{Type: "issue_refund", Once: &kernel.OnceKey{Fields: []string{"charge_id"}}}

// procWorker is a worker process. It reports on stdout, one line per
// result, as soon as the kernel returns it:
//
//	ack write ID            a record written
//	ack decide PROPOSAL CODE RECORD EVIDENCE   a decision ("-" for none)
//	ack effect ACTION CHARGE   a refund effect run, its result recorded
//	ack gate CALL OUTCOME CODE DECISION ACTION   a gated tool call's result
//	ack recover ACTION OUTCOME CODE DECISION      an action Gate.Recover drove
//	fail ...                an error the test does not expect
//	done                    every loop finished
func procWorker(t *testing.T) {
	ctx := context.Background()
	id, schema := os.Getenv(procIDEnv), os.Getenv(procSchemaEnv)
	s, err := openHelperStore(ctx, schema)
	if err != nil {
		t.Fatalf("worker %s: Open: %v", id, err)
	}
	defer s.Close()
	w := &worker{id: id, s: s}
	ledger, err := pgxpool.New(ctx, os.Getenv(pgtest.EnvDSN))
	if err != nil {
		t.Fatalf("worker %s: ledger: %v", id, err)
	}
	defer ledger.Close()
	w.ledger, w.ledgerSchema = ledger, pgx.Identifier{os.Getenv(procLedgerEnv)}.Sanitize()
	tools := []toolgate.Tool{{Unscoped: true, Name: gateTool, Description: "Refund a charge.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"charge_id":{"type":"string"},"amount":{"type":"number"},"is_duplicate":{"type":"boolean"}},"required":["charge_id","amount"]}`),
		Requires:   []string{"gate_refund_due"}, Result: gateResult, Effect: w.gateEffect, Once: &kernel.OnceKey{Fields: []string{"charge_id"}},
		Bindings: []toolgate.Binding{{Arg: "charge_id", Percept: "gate_charge", Op: "equal"}, {Arg: "amount", Percept: "gate_charge", Op: "at_most"}}}}
	if w.gate, err = toolgate.New(ctx, toolgate.Config{
		Kernel: kernel.Config{Store: s, ActionSpecs: []kernel.ActionSpec{refundSpec},
			BeliefSpecs: []kernel.BeliefSpec{{Kind: "gate_refund_due", DependsOn: []string{"gate_charge"}}}},
		Tools:     tools,
		Lease:     gateLease,
		Contracts: map[string][]string{"support": {gateTool}},
	}); err != nil {
		t.Fatalf("worker %s: toolgate.New: %v", id, err)
	}
	defer w.gate.Close()
	w.k = w.gate.Kernel()
	effects, err := os.OpenFile(os.Getenv(procEffectsEnv), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatalf("worker %s: %v", id, err)
	}
	defer effects.Close()
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)

	w.effects = effects
	if strings.HasSuffix(id, "r") {
		// Restarted: once the dead process's leases are over, finish what
		// its gated calls left.
		time.Sleep(gateLease + 50*time.Millisecond)
		results, err := w.gate.Recover(ctx)
		if err != nil {
			w.fail("recover", err)
		}
		for _, r := range results {
			w.report("ack recover %s %s %s %s", r.ActionID, r.Outcome, r.Code, orDash(r.DecisionID))
		}
	}
	var wg sync.WaitGroup
	for g := range procGoroutines {
		wg.Go(func() { w.loop(ctx, g) })
	}
	wg.Wait()
	w.sweep(ctx) // run the effects of refunds whose executor is gone
	fmt.Println("done")
}

type worker struct {
	id      string
	k       *kernel.Kernel
	s       *pgstore.Store
	effects *os.File
	mu      sync.Mutex // orders the report lines

	gate         *toolgate.Gate
	ledger       *pgxpool.Pool // the refund provider's tables
	ledgerSchema string        // quoted
}

// gateEffect is the gated refund's effect: the refund provider records the
// call, then the refund under its idempotency key (a replay of the key
// returns the first refund, as a payment API does, and is counted).
func (w *worker) gateEffect(ctx context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
	charge, _ := inv.Args["charge_id"].(string)
	if _, err := w.ledger.Exec(ctx, "INSERT INTO "+w.ledgerSchema+".calls (key, attempt, action, worker) VALUES ($1, $2, $3, $4)",
		inv.Key, inv.Attempt, inv.ActionID, w.id); err != nil {
		return nil, err
	}
	var first string
	if err := w.ledger.QueryRow(ctx, "INSERT INTO "+w.ledgerSchema+".refunds (key, action, charge, worker) VALUES ($1, $2, $3, $4)"+
		" ON CONFLICT (key) DO UPDATE SET replays = refunds.replays + 1 RETURNING action", inv.Key, inv.ActionID, charge, w.id).Scan(&first); err != nil {
		return nil, err
	}
	return blackboard.Payload{"refund_id": "re_" + first, "charge_id": charge}, nil
}

// gated makes the episode's gated refund call: a percept and the belief
// the tool requires, then the call through the gate.
func (w *worker) gated(ctx context.Context, trace, charge, call string) {
	p, err := w.k.Handle(blackboard.RoleTool, "gate-lookup").Write(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Percepts, Kind: "gate_charge",
		Payload: blackboard.Payload{"charge_id": charge, "amount": 25.0}})
	if err != nil {
		w.fail("gate percept", err)
		return
	}
	w.report("ack write %s", p)
	b, err := w.k.Governor().Submit(ctx, "gate-analyst", kernel.Entry{TraceID: trace, Slot: blackboard.Beliefs, Kind: "gate_refund_due",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"gate_charge"}}}, w.recorded(trace, "gate_refund_due"))
	if err != nil {
		w.fail("gate belief", err)
		return
	}
	w.decided(b)
	res, err := w.gate.Call(ctx, toolgate.Call{ID: call, Tool: gateTool, Caller: "support", TraceID: trace,
		Args: json.RawMessage(fmt.Sprintf(`{"charge_id":%q,"amount":25,"is_duplicate":false}`, charge))})
	if err != nil {
		w.fail("gate call "+call, err)
		return
	}
	w.report("ack gate %s %s %s %s %s", call, res.Outcome, res.Code, orDash(res.DecisionID), orDash(res.ActionID))
}

func (w *worker) report(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	fmt.Printf(format+"\n", args...)
}

func (w *worker) fail(what string, err error) {
	w.report("fail %s: %v", what, err)
}

// loop runs the worker's episodes: on a trace of its own, then on a trace
// every loop of every process writes to, in turn. The first episodes
// refund the charges every loop refunds.
func (w *worker) loop(ctx context.Context, g int) {
	for i := range procEpisodes {
		charge := fmt.Sprintf("ch_%s_%d_%d", w.id, g, i)
		if i < procCharges {
			charge = fmt.Sprintf("ch_shared_%d", i)
		}
		trace, tag := fmt.Sprintf("w%sg%de%d", w.id, g, i), ""
		if i%2 == 1 {
			trace, tag = fmt.Sprintf("shared-%d", i/2%procShared), fmt.Sprintf("_w%sg%de%d", w.id, g, i)
		}
		w.episode(ctx, trace, tag, charge, i%4 == 3)
		// The gated refund, in half the episodes (on own and shared
		// traces), the first for the charges every loop refunds.
		if i < procCharges || i%3 == 0 {
			gcharge := fmt.Sprintf("gch_%s_%d_%d", w.id, g, i)
			if i < procCharges {
				gcharge = fmt.Sprintf("gch_shared_%d", i)
			}
			w.gated(ctx, trace, gcharge, fmt.Sprintf("call_w%sg%de%d", w.id, g, i))
		}
	}
}

// decided reports a decision.
func (w *worker) decided(d kernel.Decision) {
	w.report("ack decide %s %s %s %s", d.ProposalID, d.Code, orDash(d.CommittedID), orDash(d.EvidenceID))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// episode is the governed refund (the shape of the kernel tests' runEpisode), with every
// decision recorded (Entry.Audit) and the refund's effect run once. On a
// shared trace the kinds carry tag, so that the loops' episodes do not
// decide on each other's records. A stale charge ends in the fallback.
func (w *worker) episode(ctx context.Context, trace, tag, charge string, stale bool) {
	// The episode records its decisions, as governance code does: through
	// the kernel's Governor, as the planner "bk".
	sym, tool, gov := w.k.Symbolic("policy"), w.k.Handle(blackboard.RoleTool, "stripe"), w.k.Governor()
	recorded := w.recorded
	if tag == "" {
		if _, err := sym.CommitConstraint(ctx, trace, kernel.Constraint{Name: "no_duplicate_refund", Enabled: true, BlocksField: "is_duplicate"}, ""); err != nil {
			w.fail("constraint", err)
			return
		}
	}
	p, err := tool.Write(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Percepts, Kind: "charge" + tag, Payload: blackboard.Payload{
		"charge_id": charge, "amount": 149.99, "currency": "usd", "stale": stale}})
	if err != nil {
		w.fail("percept", err)
		return
	}
	w.report("ack write %s", p)
	belief, err := gov.Submit(ctx, "bk", kernel.Entry{TraceID: trace, Slot: blackboard.Beliefs, Kind: "refund_due" + tag,
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"charge" + tag}}}, recorded(trace, "refund_due"+tag))
	if err != nil {
		w.fail("belief", err)
		return
	}
	w.decided(belief)
	step := map[string]any{"action": "issue_refund", "requires_beliefs": []string{"refund_due" + tag}, "is_duplicate": false}
	plan, err := gov.Submit(ctx, "bk", kernel.Entry{TraceID: trace, Slot: blackboard.Plans, Kind: "action_plan" + tag,
		Payload: blackboard.Payload{"steps": []any{step}}}, recorded(trace, "action_plan"+tag))
	if err != nil {
		w.fail("plan", err)
		return
	}
	w.decided(plan)
	if plan.Committed() {
		act, err := gov.Submit(ctx, "bk", kernel.Entry{TraceID: trace, Slot: blackboard.Actions, Kind: "issue_refund", Payload: blackboard.Payload{
			"type": "issue_refund", "charge_id": charge, "amount": 149.99, "is_duplicate": false, "requires_beliefs": []string{"refund_due" + tag}}},
			recorded(trace, "issue_refund"))
		if err != nil {
			w.fail("refund", err)
			return
		}
		w.decided(act)
		if act.Committed() {
			rec, err := w.k.Reader().Get(ctx, act.CommittedID)
			if err != nil {
				w.fail("refund read", err)
				return
			}
			w.execute(ctx, rec)
		}
		return
	}
	fb, err := gov.Submit(ctx, "bk", kernel.Entry{TraceID: trace, Slot: blackboard.Actions, Kind: kernel.FallbackQueueForReview,
		Payload: blackboard.Payload{"type": kernel.FallbackQueueForReview, "reason": string(plan.Code)}, InputRefs: []string{plan.ProposalID}},
		recorded(trace, kernel.FallbackQueueForReview))
	if err != nil {
		w.fail("fallback", err)
		return
	}
	w.decided(fb)
}

// recorded is a governed submit's then: the decision record of a proposal
// of kind, naming the worker, in the decision's batch.
func (w *worker) recorded(trace, kind string) func(kernel.Decision, blackboard.Record) ([]kernel.Follow, error) {
	return func(d kernel.Decision, committed blackboard.Record) ([]kernel.Follow, error) {
		r := audit.ForDecision(trace, kind, d, committed)
		r.Context = blackboard.Payload{"worker": w.id}
		f, err := r.Follow()
		return []kernel.Follow{f}, err
	}
}

// execute runs a committed refund's effect at most once across every
// process: the attempt record claims the effect's once-key first, then the
// effect runs (a line in the effects file, as a payment provider would
// record the refund), then its result is recorded with its decision
// record. A process killed between the claim and the result leaves an
// attempt without a result, for a person to look at; the effect never
// runs twice.
func (w *worker) execute(ctx context.Context, action blackboard.Record) {
	// The executor claims keys and records decisions: the Governor's.
	gov, writer := w.k.Governor(), "executor-"+w.id
	trace, charge := action.Provenance.TraceID, action.Payload["charge_id"]
	attempt, err := writeResult(gov.Write(ctx, writer, kernel.Entry{TraceID: trace, Slot: blackboard.Percepts, Kind: "refund_attempt",
		Payload: blackboard.Payload{"action": action.ID, "worker": w.id}, OnceKeys: []string{"effect/" + action.ID}}, nil))
	if errors.Is(err, blackboard.ErrDuplicateKey) {
		return // another process runs it
	}
	if err != nil {
		w.fail("attempt", err)
		return
	}
	w.report("ack write %s", attempt.ID)
	if _, err := fmt.Fprintf(w.effects, "refund %s %v %s\n", action.ID, charge, w.id); err != nil {
		w.fail("effect", err)
		return
	}
	result, err := writeResult(gov.Write(ctx, writer, kernel.Entry{TraceID: trace, Slot: blackboard.Percepts, Kind: "refund_result",
		Payload: blackboard.Payload{"action": action.ID, "refund_id": "re_" + action.ID}, InputRefs: []string{attempt.ID}},
		func(rec blackboard.Record) ([]kernel.Follow, error) {
			r := audit.ForRecord(rec, "issue_refund", audit.OutcomeExecuted, reason.Committed)
			r.Context = blackboard.Payload{"worker": w.id}
			f, err := r.Follow()
			return []kernel.Follow{f}, err
		}))
	if err != nil {
		w.fail("result", err)
		return
	}
	w.report("ack write %s", result.ID)
	w.report("ack effect %s %v", action.ID, charge)
}

// sweep tries to run the effect of every committed refund in the store, as
// a recovery executor would: the once-key lets only the first try run it.
func (w *worker) sweep(ctx context.Context) {
	for r, err := range w.s.ListSlot(ctx, blackboard.Actions, store.Filter{Status: blackboard.StatusActive}) {
		if err != nil {
			w.fail("sweep", err)
			return
		}
		if r.Kind == "issue_refund" && r.Mode == blackboard.ModeCommit {
			w.execute(ctx, r)
		}
	}
}

// learnerReport is what a learner process prints.
type learnerReport struct {
	Counts  map[reason.Code]int
	Learned []adaptive.Lesson
	Pending int
}

// procLearner starts an adaptive learner on the store and prints what it
// found there.
func procLearner(t *testing.T) {
	ctx := context.Background()
	s, err := openHelperStore(ctx, os.Getenv(procSchemaEnv))
	if err != nil {
		t.Fatalf("learner: Open: %v", err)
	}
	defer s.Close()
	k, err := kernel.New(kernel.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	l, err := adaptive.New(ctx, k.Symbolic("adaptive"))
	if err != nil {
		t.Fatalf("learner: %v", err)
	}
	fmt.Println("ready")
	out, _ := json.Marshal(learnerReport{Counts: l.Counts(), Learned: l.Learned(), Pending: len(l.Pending())})
	fmt.Printf("learner %s\n", out)
}

var positionRE = regexp.MustCompile(`:([0-9]+)$`)

// checkProcesses checks the store after the run; see TestManyProcesses.
func checkProcesses(ctx context.Context, t *testing.T, schema, effectsPath string, workers []*helper) {
	pool := pgtest.Pool(t)
	s := storeIn(t, pool, schema)
	k, err := kernel.New(kernel.Config{Store: s, ActionSpecs: []kernel.ActionSpec{refundSpec}})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()

	// Every trace's hash chain holds, though processes raced on them.
	if rep, err := ledger.Verify(ctx, s, nil); err != nil || !rep.OK() {
		t.Errorf("the store's history after the processes: %v", err)
		for _, tr := range rep.Traces {
			if tr.Break != nil {
				t.Errorf("  %v", tr.Break)
			}
		}
	}

	// Every record, trace by trace, from the database's own count.
	var traces []string
	rows, err := pool.Query(ctx, "SELECT trace_id FROM "+pgx.Identifier{schema, "bk_traces"}.Sanitize()+" ORDER BY trace_id")
	if err != nil {
		t.Fatal(err)
	}
	traces, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]blackboard.Record{}
	total := 0
	for _, tr := range traces {
		recs := records(t, s.ListTrace(ctx, "", tr))
		n, err := countTrace(ctx, s, "", tr)
		if err != nil || n != len(recs) {
			t.Errorf("trace %s: ReadState %d (%v), ListTrace %d records", tr, n, err, len(recs))
		}
		for i, r := range recs {
			total++
			if _, dup := byID[r.ID]; dup {
				t.Errorf("record id %s twice", r.ID)
			}
			byID[r.ID] = r
			if m := positionRE.FindStringSubmatch(r.ID); m == nil || m[1] != strconv.Itoa(i+1) {
				t.Errorf("trace %s: record %s is at position %d", tr, r.ID, i+1)
			}
			// The kernel's evidence artifact lands with, and just before,
			// the belief it justifies. (The gate's decision records, policy
			// snapshots and run controls are kernel-role evidence too.)
			if r.Slot == blackboard.Evidence && r.Kind != audit.Kind && r.Kind != audit.KindPolicy && r.Kind != audit.KindControls &&
				r.Provenance.Role == blackboard.RoleKernel {
				if i+1 >= len(recs) || recs[i+1].Slot != blackboard.Beliefs || !slices.Equal(recs[i+1].EvidenceRefs, []string{r.ID}) {
					t.Errorf("evidence %s without its belief", r.ID)
				}
			}
		}
	}
	var stored int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{schema, "bk_records"}.Sanitize()).Scan(&stored); err != nil || stored != total {
		t.Errorf("the traces list %d records, the table holds %d (%v)", total, stored, err)
	}

	// Decision records, by the proposal they decide.
	decisions := map[string]audit.Entry{}
	for d, err := range audit.List(ctx, k.Reader(), audit.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		decisions[d.ID] = d
	}
	proposals := 0
	for _, r := range byID {
		if r.Mode == blackboard.ModePropose {
			proposals++
			if _, ok := decisions["decision:"+r.ID]; !ok {
				t.Errorf("proposal %s (%s) has no decision record", r.ID, r.Reason)
			}
		}
	}

	// Acknowledged results.
	acked, failures, effects := 0, map[reason.Code]int{}, map[string]string{}
	for _, w := range workers {
		for _, a := range w.acks {
			acked++
			switch a[0] {
			case "write":
				if _, ok := byID[a[1]]; !ok {
					t.Errorf("worker %s: acknowledged write %s is not in the store", w.id, a[1])
				}
			case "decide":
				checkDecision(t, w.id, a[1:], byID, decisions)
				if code := reason.Code(a[2]); !code.OK() {
					failures[code]++
				}
			case "effect":
				effects[a[1]] = a[2]
			}
		}
	}

	// Refunds: one per once-key, at most one per charge, effects at most
	// once, every acknowledged effect run.
	refunds := map[string][]string{} // charge -> committed refund actions
	for _, r := range byID {
		if r.Slot == blackboard.Actions && r.Kind == "issue_refund" && r.Mode == blackboard.ModeCommit {
			charge, _ := r.Payload["charge_id"].(string)
			refunds[charge] = append(refunds[charge], r.ID)
		}
	}
	for charge, ids := range refunds {
		if len(ids) != 1 {
			t.Errorf("charge %s refunded by %d committed actions %v", charge, len(ids), ids)
		}
	}
	for i := range procCharges {
		charge := fmt.Sprintf("ch_shared_%d", i)
		if len(refunds[charge]) != 1 {
			t.Errorf("the refund of %s, submitted by every process, committed %d times", charge, len(refunds[charge]))
		}
	}
	data, err := os.ReadFile(effectsPath)
	if err != nil {
		t.Fatal(err)
	}
	ran := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) != 4 {
			t.Errorf("effects file line %q", line)
			continue
		}
		ran[f[1]]++
		if r, ok := byID[f[1]]; !ok || r.Kind != "issue_refund" || r.Mode != blackboard.ModeCommit {
			t.Errorf("an effect ran for %s, which is not a committed refund", f[1])
		}
	}
	for action, n := range ran {
		if n != 1 {
			t.Errorf("the effect of %s ran %d times", action, n)
		}
	}
	for action := range effects {
		if ran[action] != 1 {
			t.Errorf("acknowledged effect of %s ran %d times", action, ran[action])
		}
	}
	for charge, ids := range refunds {
		id, err := s.ClaimedBy(ctx, "", "effect/"+ids[0])
		if err != nil {
			if ran[ids[0]] > 0 {
				t.Errorf("the effect of %s (%s) ran without a claimed attempt: %v", ids[0], charge, err)
			}
			continue
		}
		if a := byID[id]; a.Kind != "refund_attempt" || a.Payload["action"] != ids[0] {
			t.Errorf("the effect key of %s is held by %+v", ids[0], a)
		}
	}

	// The adaptive learner counts every process's failures: here, and in
	// a second process, which agrees and learns nothing again.
	want := map[reason.Code]int{}
	for _, slot := range []blackboard.Slot{blackboard.Beliefs, blackboard.Plans, blackboard.Predictions, blackboard.Actions} {
		for r, err := range s.ListSlot(ctx, slot, store.Filter{Status: blackboard.StatusInvalidated}) {
			if err != nil {
				t.Fatal(err)
			}
			if r.Reason != reason.SupersededByCommit {
				want[r.Reason]++
			}
		}
	}
	l, err := adaptive.New(ctx, k.Symbolic("adaptive"))
	if err != nil {
		t.Fatal(err)
	}
	counts := l.Counts()
	if !mapsEqual(counts, want) {
		t.Errorf("the learner counts %v, the store holds failures %v", counts, want)
	}
	for code, n := range failures {
		if counts[code] < n {
			t.Errorf("the learner counts %d %s, the workers acknowledged %d", counts[code], code, n)
		}
	}
	if counts[reason.StaleEvidence] < 2 {
		t.Fatalf("too few failures to learn from: %v", counts)
	}
	learned, err := l.Commit(ctx, "learning")
	if err != nil || len(learned) == 0 {
		t.Fatalf("the learner learned %v, %v", learned, err)
	}
	second := startHelper(ctx, t, "learner", "learner", schema, effectsPath)
	second.waitReady(t)
	second.read(-1)
	if err := second.cmd.Wait(); err != nil {
		t.Fatalf("the second learner: %v; stderr:\n%s", err, second.stderr.String())
	}
	var rep learnerReport
	i := slices.IndexFunc(second.out, func(l string) bool { return strings.HasPrefix(l, "learner ") })
	if i < 0 || json.Unmarshal([]byte(strings.TrimPrefix(second.out[i], "learner ")), &rep) != nil {
		t.Fatalf("the second learner reported %q", second.out)
	}
	if !mapsEqual(rep.Counts, counts) {
		t.Errorf("the second learner counts %v, the first %v", rep.Counts, counts)
	}
	for _, x := range learned {
		if !slices.ContainsFunc(rep.Learned, func(y adaptive.Lesson) bool {
			return y.Constraint.Name == x.Constraint.Name && y.RecordID == x.RecordID
		}) {
			t.Errorf("the second learner does not hold %s (%s) the first learned: %+v", x.Constraint.Name, x.RecordID, rep.Learned)
		}
	}
	if rep.Pending != 0 {
		t.Errorf("the second learner would learn %d constraints again", rep.Pending)
	}
	t.Logf("%d processes (one killed, then started again): %d records in %d traces, %d proposals decided, %d results acknowledged, "+
		"%d refunds committed, %d effects run, failures %v", len(workers), total, len(traces), proposals, acked, len(refunds), len(ran), counts)
}

// checkDecision checks an acknowledged decision against the store: the
// proposal, the committed record and the evidence artifact are there, with
// the decision's code, and so is its decision record.
func checkDecision(t *testing.T, worker string, a []string, byID map[string]blackboard.Record, decisions map[string]audit.Entry) {
	t.Helper()
	proposal, code, committed, evidence := a[0], reason.Code(a[1]), a[2], a[3]
	p, ok := byID[proposal]
	if !ok {
		t.Errorf("worker %s: the proposal %s of an acknowledged decision (%s) is not in the store", worker, proposal, code)
		return
	}
	if committed != "-" {
		if r, ok := byID[committed]; !ok || r.Reason != code {
			t.Errorf("worker %s: acknowledged commit %s (%s) is not in the store as committed: %+v", worker, committed, code, r)
		}
	} else if p.Reason != code {
		t.Errorf("worker %s: acknowledged refusal of %s with %s, the store says %s", worker, proposal, code, p.Reason)
	}
	if _, ok := byID[evidence]; evidence != "-" && !ok {
		t.Errorf("worker %s: evidence %s of an acknowledged decision is not in the store", worker, evidence)
	}
	if d, ok := decisions["decision:"+proposal]; !ok || d.Code != code {
		t.Errorf("worker %s: the decision record of %s (%s) is missing or differs: %+v", worker, proposal, code, d)
	}
}

func mapsEqual(a, b map[reason.Code]int) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}

// checkGated checks the gated tool calls; see TestManyProcesses.
func checkGated(ctx context.Context, t *testing.T, schema, ledger string, workers []*helper) {
	pool := pgtest.Pool(t)
	s := storeIn(t, pool, schema)
	k, err := kernel.New(kernel.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	decisions := map[string]audit.Entry{}
	executed := map[string]int{} // result record -> executed decision records about it
	for d, err := range audit.List(ctx, k.Reader(), audit.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		decisions[d.ID] = d
		if d.Outcome == audit.OutcomeExecuted {
			executed[d.Subject]++
		}
	}

	// Committed gated refunds, their attempts and their results.
	actions := map[string]blackboard.Record{} // id -> committed action
	perCharge := map[string][]string{}
	for r, err := range s.ListSlot(ctx, blackboard.Actions, store.Filter{}) {
		if err != nil {
			t.Fatal(err)
		}
		if r.Kind == gateTool && r.Mode == blackboard.ModeCommit {
			actions[r.ID] = r
			charge, _ := r.Payload["charge_id"].(string)
			perCharge[charge] = append(perCharge[charge], r.ID)
		}
	}
	results, attempts, keys := map[string][]string{}, map[string]int{}, map[string]string{}
	var unbound []string // actions refused for good because their arguments do not follow from their grounding
	refusedCharges := map[string]bool{}
	for r, err := range s.ListSlot(ctx, blackboard.Percepts, store.Filter{}) {
		if err != nil {
			t.Fatal(err)
		}
		eff, _ := audit.EffectOf(r)
		action := eff.ActionID
		switch r.Kind {
		case gateResult:
			results[action] = append(results[action], r.ID)
			keys[action] = eff.Key
			if executed[r.ID] != 1 {
				t.Errorf("result %s of %s has %d executed decision records", r.ID, action, executed[r.ID])
			}
		case audit.KindAttempt:
			if _, ok := actions[action]; ok {
				attempts[action]++
			}
		case audit.KindFailed:
			// Processes share traces, so the belief an action is committed
			// on may be about another process's charge; the gate refuses
			// such an action for good (route 12 of the second review) and
			// retires it. Any other failure is a bug.
			if eff.Code != reason.ArgumentNotBound {
				t.Errorf("gated action %s failed: %+v", action, eff)
				continue
			}
			unbound = append(unbound, action)
		}
	}
	for _, id := range unbound {
		a, ok := actions[id]
		if !ok {
			t.Errorf("a refusal was recorded for %s, which is not a committed gated action", id)
			continue
		}
		if a.Status != blackboard.StatusInvalidated {
			t.Errorf("action %s, refused for good, is %v, not retired", id, a.Status)
		}
		delete(actions, id)
		charge, _ := a.Payload["charge_id"].(string)
		perCharge[charge] = slices.DeleteFunc(perCharge[charge], func(x string) bool { return x == id })
		if len(perCharge[charge]) == 0 {
			delete(perCharge, charge) // refused, so at most once rather than once
			refusedCharges[charge] = true
		}
	}
	for charge, ids := range perCharge {
		if len(ids) != 1 {
			t.Errorf("gated refund of %s committed %d times %v", charge, len(ids), ids)
		}
	}
	for i := range procCharges {
		if charge := fmt.Sprintf("gch_shared_%d", i); len(perCharge[charge]) != 1 && !refusedCharges[charge] {
			t.Errorf("the gated refund of %s, called from every process, committed %d times", charge, len(perCharge[charge]))
		}
	}
	for id := range actions {
		if len(results[id]) != 1 {
			t.Errorf("committed gated action %s has %d recorded results %v", id, len(results[id]), results[id])
		}
	}
	for id := range results {
		if _, ok := actions[id]; !ok {
			t.Errorf("a result was recorded for %s, which is not a committed gated action", id)
		}
	}

	// The provider's ledger: each action's key once, with that action.
	l := pgx.Identifier{ledger}.Sanitize()
	type refund struct {
		Key, Action, Charge, Worker string
		Replays                     int
	}
	rows, err := pool.Query(ctx, "SELECT key, action, charge, worker, replays FROM "+l+".refunds")
	if err != nil {
		t.Fatal(err)
	}
	refunds, err := pgx.CollectRows(rows, pgx.RowToStructByPos[refund])
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]refund{}
	for _, r := range refunds {
		byKey[r.Key] = r
		a, ok := actions[r.Action]
		if !ok {
			t.Errorf("the ledger refunded %s (key %s) for %s, not a committed gated action", r.Charge, r.Key, r.Action)
			continue
		}
		if c, _ := a.Payload["charge_id"].(string); c != r.Charge {
			t.Errorf("the ledger refunded %s for %s, whose charge is %s", r.Charge, r.Action, c)
		}
		if r.Replays > 0 && attempts[r.Action] < 2 {
			t.Errorf("key %s replayed %d times, though %s had %d attempts", r.Key, r.Replays, r.Action, attempts[r.Action])
		}
	}
	if len(refunds) != len(actions) {
		t.Errorf("the ledger holds %d refunds, %d gated actions committed", len(refunds), len(actions))
	}
	for id := range actions {
		if r, ok := byKey[keys[id]]; !ok || r.Action != id {
			t.Errorf("committed gated action %s (key %q) is not in the ledger as its own: %+v", id, keys[id], r)
		}
	}
	calls := map[string]int{}
	rows, err = pool.Query(ctx, "SELECT action, count(*) FROM "+l+".calls GROUP BY action")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var a string
		var n int
		if err := rows.Scan(&a, &n); err != nil {
			t.Fatal(err)
		}
		calls[a] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for a, n := range calls {
		if n > attempts[a] {
			t.Errorf("the effect of %s was called %d times, with %d attempts recorded", a, n, attempts[a])
		}
	}

	// Every gated call and every recovery acknowledged has its decision
	// record, with the call's code.
	outcomes := map[audit.Outcome]int{}
	recovered := 0
	for _, w := range workers {
		for _, a := range w.acks {
			switch a[0] {
			case "gate":
				call, outcome, code, decision, action := a[1], audit.Outcome(a[2]), reason.Code(a[3]), a[4], a[5]
				outcomes[outcome]++
				d, ok := decisions[decision]
				switch {
				case !ok:
					t.Errorf("worker %s: gated call %s (%s %s) has no decision record %s", w.id, call, outcome, code, decision)
				case d.Code != code:
					t.Errorf("worker %s: gated call %s returned %s, its decision record %s says %s", w.id, call, code, decision, d.Code)
				}
				if outcome == audit.OutcomeExecuted && len(results[action]) != 1 {
					t.Errorf("worker %s: gated call %s executed %s, which has %d results", w.id, call, action, len(results[action]))
				}
			case "recover":
				recovered++
				if _, ok := decisions[a[4]]; !ok {
					t.Errorf("worker %s: recovered %s (%s) has no decision record %s", w.id, a[1], a[2], a[4])
				}
			}
		}
	}
	if outcomes[audit.OutcomeExecuted] == 0 || outcomes[audit.OutcomeRefused] == 0 {
		t.Errorf("gated calls: %v, want some executed and some refused", outcomes)
	}
	t.Logf("gated calls %v, %d actions recovered, %d gated refunds committed, %d in the ledger", outcomes, recovered, len(actions), len(refunds))
}

// written is what a Governor.Write returned: the id of the record and
// those of its follow records.
type written struct {
	ID       string
	Appended []string
}

// writeResult gathers Governor.Write's results.
func writeResult(id string, appended []string, err error) (written, error) {
	return written{id, appended}, err
}
