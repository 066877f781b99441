package main

import (
	"context"
	"crypto"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/internal/cmdline"
	"github.com/blackboardkernel/bk/internal/printer"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/store/sqlitestore"
	"github.com/blackboardkernel/bk/supervisor"
	"github.com/blackboardkernel/bk/toolgate"
	"github.com/blackboardkernel/bk/worker/llm"
)

// contextWindow is the tokens of the model's context the compiled context
// may fill (pack.WithWindow): the model's context length less its answer.
const contextWindow = 16384

// errUsage is wrapped by every error about the command line (exit 2).
var errUsage = cmdline.ErrUsage

// config is what the command line asks for.
type config struct {
	db         string
	seed       int64
	ns         string
	crashAfter int
	failRate   float64
	llmURL     string
	llmModel   string
	llmKey     string
	approver   string // approverSupervisor or approverPerson
}

// The --approver values: who decides the refunds that wait for approval.
const (
	approverSupervisor = "supervisor" // the scripted supervisor, inside the run
	approverPerson     = "person"     // a person, with bk serve or bk approve, between runs
)

func newFlags(cfg *config, getenv func(string) string) *flag.FlagSet {
	fs := flag.NewFlagSet("support_desk", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.db, "db", "", "SQLite file to keep the records in, with the simulated world's journal in FILE.world and the key that signs the history's checkpoints in FILE.key (its public key in FILE.key.pub; made when missing) (default: in memory)")
	fs.Int64Var(&cfg.seed, "seed", 4, "seed of the payment API's transient failures")
	fs.StringVar(&cfg.ns, "namespace", "support_desk", "namespace of this application's records in a shared store")
	fs.IntVar(&cfg.crashAfter, "crash-after", 0, "once N effect calls were made, kill the process (SIGKILL) in the next refund the payment API pays, before the gate records its result (needs --db)")
	fs.Float64Var(&cfg.failRate, "fail-rate", 0.25, "share of payment API requests that fail with a 503 (retried by the gate)")
	fs.StringVar(&cfg.llmURL, "llm-url", getenv("BK_LLM_URL"), "OpenAI-compatible endpoint to use instead of the scripted model (env BK_LLM_URL)")
	fs.StringVar(&cfg.llmModel, "llm-model", getenv("BK_LLM_MODEL"), "model name (env BK_LLM_MODEL)")
	fs.StringVar(&cfg.llmKey, "llm-api-key", "", "API key (env BK_LLM_API_KEY; never printed)")
	fs.StringVar(&cfg.approver, "approver", "", "who decides the refunds that wait for approval: supervisor (scripted, in this run) or person (with bk serve or bk approve between runs; needs --db); default person with --db, else supervisor")
	return fs
}

func usage() string {
	var b strings.Builder
	fs := newFlags(&config{}, func(string) string { return "" })
	fs.SetOutput(&b)
	b.WriteString("usage: support_desk [--db FILE] [--approver supervisor|person] [--crash-after N] [--seed S] [--namespace NAME] [--llm-url URL --llm-model NAME]\n")
	fs.PrintDefaults()
	return b.String()
}

// parseArgs reads the command line; getenv supplies BK_LLM_URL,
// BK_LLM_MODEL and BK_LLM_API_KEY, which the flags override. Errors wrap
// errUsage (or are flag.ErrHelp for -h).
func parseArgs(args []string, getenv func(string) string) (config, error) {
	var cfg config
	fs := newFlags(&cfg, getenv)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, err
		}
		return cfg, fmt.Errorf("%w: %w", errUsage, err)
	}
	keySet := false
	fs.Visit(func(f *flag.Flag) { keySet = keySet || f.Name == "llm-api-key" })
	if !keySet {
		cfg.llmKey = getenv("BK_LLM_API_KEY")
	}
	switch {
	case fs.NArg() > 0:
		return cfg, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	case cfg.crashAfter < 0:
		return cfg, fmt.Errorf("%w: --crash-after must not be negative", errUsage)
	case cfg.crashAfter > 0 && cfg.db == "":
		return cfg, fmt.Errorf("%w: --crash-after needs --db: a crash loses everything held in memory", errUsage)
	case cfg.failRate < 0 || cfg.failRate >= 1:
		return cfg, fmt.Errorf("%w: --fail-rate must be in [0, 1), not %v", errUsage, cfg.failRate)
	case cfg.llmURL != "" && cfg.llmModel == "":
		return cfg, fmt.Errorf("%w: --llm-url needs --llm-model (or BK_LLM_MODEL)", errUsage)
	case cfg.approver == "" && cfg.db != "":
		cfg.approver = approverPerson // a store a person can open between runs
	case cfg.approver == "":
		cfg.approver = approverSupervisor // in memory: nobody could decide between runs
	}
	switch {
	case cfg.approver != approverSupervisor && cfg.approver != approverPerson:
		return cfg, fmt.Errorf("%w: --approver must be supervisor or person, not %q", errUsage, cfg.approver)
	case cfg.approver == approverPerson && cfg.db == "":
		return cfg, fmt.Errorf("%w: --approver person needs --db: the person decides in the store between runs", errUsage)
	case cfg.ns == "":
		return cfg, fmt.Errorf("%w: --namespace must not be empty", errUsage)
	}
	return cfg, nil
}

// run is the whole program: it parses args, resumes what an earlier run
// left, works through the tickets and writes the report to stdout. A bad
// command line is an error wrapping errUsage, returned before anything is
// opened or written.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) (err error) {
	cfg, err := parseArgs(args, getenv)
	if errors.Is(err, flag.ErrHelp) {
		_, err = io.WriteString(stdout, usage())
		return err
	}
	if err != nil {
		return err
	}
	// Every input is read and checked before any file is created or
	// written: the model's endpoint, the world's journal, then the
	// database (whole).
	url, model, modelName := cfg.llmURL, cfg.llmModel, cfg.llmModel+" at "+cfg.llmURL
	if url == "" {
		m := newScriptedModel()
		defer m.Close()
		url, model, modelName = m.URL, "scripted", "scripted (an OpenAI-compatible server on "+m.Listener.Addr().String()+")"
	}
	client, err := llm.New(url, llm.WithModel(model), llm.WithAPIKey(cfg.llmKey), llm.WithTemperature(0))
	if err != nil {
		return err
	}
	journal := ""
	if cfg.db != "" {
		journal = cfg.db + ".world"
	}
	w, err := openWorld(journal, cfg.seed, cfg.failRate)
	if err != nil {
		return err
	}
	var store store.Store
	var key crypto.Signer // signs checkpoints of a file's history, for bk verify
	storeName := "memory"
	if cfg.db == "" {
		store = memstore.New()
	} else {
		s, err := sqlitestore.Open(ctx, cfg.db, sqlitestore.WithCheck())
		if err != nil {
			return fmt.Errorf("database %s: %w", cfg.db, err)
		}
		store, storeName = s, "sqlite "+cfg.db
	}
	defer func() { err = errors.Join(err, store.Close()) }()
	if cfg.db != "" {
		// The key once the database checked out: a run refused on its
		// input makes no file.
		if key, err = loadKey(cfg.db + ".key"); err != nil {
			return err
		}
	}
	if err := w.open(); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, w.Close()) }()
	out := &printer.Writer{W: stdout}
	var r *reporter
	d, err := newDesk(ctx, kernel.Config{Store: store, Namespace: cfg.ns, Signer: key}, w, client, func(ctx context.Context, ev supervisor.Event) { r.event(ctx, ev) })
	if err != nil {
		if d.g != nil {
			err = errors.Join(err, d.g.Close())
		}
		return err
	}
	// The supervisor, then the gate; the store and the world after them
	// (deferred above).
	defer func() { err = errors.Join(err, d.close()) }()
	d.crashAfter, d.out = cfg.crashAfter, out
	r = newReporter(ctx, d, out)
	r.person, r.db, r.ns = cfg.approver == approverPerson, cfg.db, cfg.ns

	fmt.Fprintf(out, "Support desk: %d tickets, model %s, store %s, seed %d\n", len(tickets), modelName, storeName, cfg.seed)
	who := approver
	if r.person {
		who = "a person (bk serve or bk approve, between runs)"
	}
	fmt.Fprintf(out, "Refunds above 500 wait for %s; the payment API fails %.0f%% of requests with a 503 and honours idempotency keys.\n",
		who, 100*cfg.failRate)
	restarted, err := r.resume()
	if err != nil {
		return err
	}
	if err := d.start(ctx, restarted); err != nil {
		return err
	}
	if restarted {
		if err := r.recovered(); err != nil {
			return err
		}
	}
	if err := d.serve(ctx, tickets, r.turn, r.done); err != nil {
		return err
	}
	d.sup.Close() // every event is in
	r.printEvents()
	if err := r.summary(); err != nil {
		return err
	}
	if cfg.crashAfter > 0 {
		fmt.Fprintf(out, "(--crash-after %d: this run made %d effect calls and paid no refund at or after effect call %d, so nothing crashed)\n",
			cfg.crashAfter, d.effects.Load(), cfg.crashAfter)
	}
	return out.Err
}

// resume says what an earlier run against the same --db left, and reports
// whether there was one: the supervisor recovers it by itself (at once,
// and again once the gate's lease ran out), and the desk waits for that
// (desk.start) before it goes on.
func (r *reporter) resume() (bool, error) {
	done, earlier := 0, false
	for _, t := range tickets {
		for n := range t.Messages {
			if r.d.w.TurnDone(turnKey(t.ID, n+1)) {
				done++
			}
		}
	}
	for _, err := range audit.List(r.ctx, r.reader, audit.Query{}) {
		if err != nil {
			return false, err
		}
		earlier = true
		break
	}
	if !earlier {
		return false, nil
	}
	if err := r.markPrinted(); err != nil {
		return true, err
	}
	total := 0
	for _, t := range tickets {
		total += len(t.Messages)
	}
	fmt.Fprintf(r.out, "\nResuming: an earlier run handled %d of %d messages.\n", done, total)
	fmt.Fprintf(r.out, "The supervisor recovers what a crashed run left once the gate's lease (%v) has run out; waiting for it.\n", lease)
	return true, nil
}

// recovered prints what the supervisor's recovery finished, once it has.
func (r *reporter) recovered() error {
	if r.printEvents() == 0 {
		fmt.Fprintln(r.out, "The supervisor found nothing left unfinished.")
	}
	return r.markPrinted()
}

// printEvents prints what the supervisor did since the last call, and
// returns how many events it printed.
func (r *reporter) printEvents() int {
	evs := r.takeEvents()
	for _, ev := range evs {
		if ev.Err != nil {
			fmt.Fprintf(r.out, "The supervisor (%s): %v\n", ev.Op, ev.Err)
			continue
		}
		verb := map[supervisor.Op]string{supervisor.OpRecover: "recovered", supervisor.OpResume: "resumed"}[ev.Op]
		kind := "action"
		if rec, err := r.reader.Get(r.ctx, ev.ActionID); err == nil {
			kind = rec.Kind
		}
		fmt.Fprintln(r.out, strings.TrimSpace(fmt.Sprintf("The supervisor %s %s %s (%s): %s %s %s", verb, ev.TraceID, kind, ev.ActionID, ev.Result.Outcome, ev.Result.Code, outputNote(ev.Result))))
	}
	return len(evs)
}

// awaitResumed returns the results of the trace's refunds that waited for
// approval, in commit order: it waits for the supervisor to finish each
// one ruled now; one decided by an earlier run is included when the
// supervisor recovered it in this run, and left out otherwise.
func (r *reporter) awaitResumed(trace string, ruled []ruling) ([]toolgate.Result, error) {
	now := map[string]bool{}
	for _, ru := range ruled {
		now[ru.ActionID] = true
	}
	var waited []string
	for rec, err := range audit.List(r.ctx, r.d.g.Kernel().Reader(), audit.Query{TraceID: trace, Tool: "issue_refund", Outcome: audit.OutcomePendingApproval}) {
		if err != nil {
			return nil, err
		}
		waited = append(waited, rec.Subject)
	}
	ctx, cancel := context.WithTimeout(r.ctx, time.Minute)
	defer cancel()
	var out []toolgate.Result
	for _, id := range waited {
		for {
			r.mu.Lock()
			res, ok := r.finished[id]
			r.mu.Unlock()
			if ok {
				out = append(out, res)
				break
			}
			if !now[id] {
				break
			}
			select {
			case <-ctx.Done():
				return out, fmt.Errorf("waiting for the supervisor to finish %s: %w", id, ctx.Err())
			case <-r.evSig:
			}
		}
	}
	return out, nil
}

// turn prepares the n-th message (from 1) of ticket t and returns what to
// tell the agent: "" when an earlier run handled it, or when it waits for
// a person's decision (and so does the rest of the ticket). A message after
// approval first has the approver decide what waits (or reads what a person
// decided), and waits for the supervisor to carry it out.
func (r *reporter) turn(t ticket, n int) (string, error) {
	if n == 1 && t.readOnly {
		// The owner's run control, recorded in the trace; again on a
		// resumed run, which changes nothing (controls only tighten).
		if err := r.d.g.Restrict(r.ctx, t.ID, toolgate.Controls{ReadOnly: true}); err != nil {
			return "", err
		}
		fmt.Fprintf(r.out, "\n%s: a chargeback on order %s is open: the desk made the ticket's trace %s\n", t.ID, t.Order, "read_only")
	}
	if r.later[t.ID] {
		return "", nil
	}
	m := t.Messages[n-1]
	if r.d.w.TurnDone(turnKey(t.ID, n)) {
		fmt.Fprintf(r.out, "\n%s message %d: handled by an earlier run\n", t.ID, n)
		return "", nil
	}
	r.hints, r.at.t, r.at.n = map[string]string{}, t, n
	if m.afterApproval {
		var rulings []ruling
		var results []toolgate.Result
		var err error
		if r.person {
			var waiting []audit.Pending
			waiting, rulings, err = personDecided(r.ctx, r.d, t.ID)
			if err != nil {
				return "", err
			}
			if len(waiting) > 0 {
				r.waitForPerson(t.ID, waiting)
				r.later[t.ID] = true
				return "", nil // the turn stays open: the next run continues it
			}
			fmt.Fprintf(r.out, "\n%s: a person decided what waited for approval; the supervisor applies it\n", t.ID)
			r.d.sup.Wake()
		} else {
			fmt.Fprintf(r.out, "\n%s: the supervisor decides what waits for approval\n", t.ID)
			resolved, err := r.d.approve(r.ctx, t.ID, func(p audit.Pending) audit.Approval {
				ru := judge(p)
				rulings = append(rulings, ru)
				return audit.Approval{TraceID: p.TraceID, ActionID: p.ActionID, Digest: p.Digest, Decision: ru.Decision, Note: ru.Note}
			})
			if err != nil {
				return "", err
			}
			results = resolved
		}
		for _, ru := range rulings {
			who := approver
			if r.person {
				who = "the person"
			}
			fmt.Fprintf(r.out, "  %s %s %s (arguments %s…): %s\n", who, ru.Decision, ru.ActionID, ru.Digest[:19], ru.Note)
		}
		if r.person {
			if results, err = r.awaitResumed(t.ID, rulings); err != nil {
				return "", err
			}
			r.printEvents()
		}
		if err := r.decisions(t.ID, resultHints(results, r.hints)); err != nil {
			return "", err
		}
		m.Text = followUp(results)
	}
	fmt.Fprintf(r.out, "\n%s message %d, from the %s: \"%s\"\n", t.ID, n, m.From, m.Text)
	return userMessage(t, n, m), nil
}

// done reports what the agent did with the message turn last returned: the
// trace's new decision records, with the hints the model was given, and
// its answer; then it marks the message handled.
func (r *reporter) done(res llm.AgentResult, runErr error) error {
	t, n := r.at.t, r.at.n
	r.modelCalls += res.Usage.ModelCalls
	r.toolCalls += len(res.Calls)
	for _, c := range res.Calls {
		if c.Result.Hint != "" && c.Result.DecisionID != "" {
			r.hints[c.Result.DecisionID] = c.Result.Hint
		}
	}
	if err := r.decisions(t.ID, r.hints); err != nil {
		return err
	}
	if runErr != nil && !errors.Is(runErr, llm.ErrMaxRounds) {
		return runErr
	}
	answer := res.Answer
	if runErr != nil {
		answer = "(no answer: " + runErr.Error() + ")"
	}
	fmt.Fprintf(r.out, "  answer: %s\n", answer)
	return r.d.w.FinishTurn(turnKey(t.ID, n))
}

// waitForPerson says that the trace's refunds wait for a person, and how
// to decide them.
func (r *reporter) waitForPerson(trace string, waiting []audit.Pending) {
	fmt.Fprintf(r.out, "\n%s: %d refund(s) wait for a person's approval; this ticket goes on in the next run against %s.\n", trace, len(waiting), r.db)
	fmt.Fprintf(r.out, "  in a browser:  bk --db %s --namespace %s serve --token-file FILE\n", r.db, r.ns)
	for _, p := range waiting {
		fmt.Fprintf(r.out, "  %s %v %v EUR on order %v (%v)\n", p.ActionID, p.Tool, p.Args["amount"], p.Args["order_id"], p.Args["reason"])
		fmt.Fprintf(r.out, "    bk --db %s --namespace %s approve --as NAME --digest %s %s   (or deny)\n", r.db, r.ns, p.Digest, p.ActionID)
	}
}

// followUp is the desk's message to the agent once the supervisor applied
// the approver's decisions.
func followUp(results []toolgate.Result) string {
	if len(results) == 0 {
		return "No refund of this ticket waits for approval any more. Tell the customer where their request stands."
	}
	var b strings.Builder
	b.WriteString("The refunds that waited for approval were decided. The gate's results:")
	for _, res := range results {
		b.WriteString(" " + res.ForModel())
	}
	b.WriteString(" Tell the customer by email.")
	return b.String()
}

func resultHints(results []toolgate.Result, hints map[string]string) map[string]string {
	for _, res := range results {
		if res.Hint != "" && res.DecisionID != "" {
			hints[res.DecisionID] = res.Hint
		}
	}
	return hints
}

// outputNote describes a refund's output.
func outputNote(res toolgate.Result) string {
	id, _ := res.Output["refund_id"].(string)
	if id == "" {
		return ""
	}
	if res.Output["idempotent_replay"] == true {
		return "- refund " + id + ", an idempotent replay: the payment API had paid it before the crash and moved no money now"
	}
	return "- refund " + id
}

// getenv is os.Getenv; tests pass their own.
var getenv = os.Getenv
