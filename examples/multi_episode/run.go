package main

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/blackboardkernel/bk/adaptive"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/cmdline"
	"github.com/blackboardkernel/bk/internal/printer"
	"github.com/blackboardkernel/bk/internal/storeflag"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/orchestrator"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/sim"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/store/pgstore"
	"github.com/blackboardkernel/bk/store/sqlitestore"
	"github.com/blackboardkernel/bk/worker"
)

// errUsage is wrapped by every error about the command line (exit 2).
var errUsage = cmdline.ErrUsage

//go:embed rules.json
var rulesJSON string

// config is what the command line asks for.
type config struct {
	episodes int
	seed     int64
	store    string
	db       string
	dsn      string
	ns       string
}

func newFlags(cfg *config) *flag.FlagSet {
	fs := flag.NewFlagSet("multi_episode", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.IntVar(&cfg.episodes, "episodes", 20, "number of episodes (at least 1)")
	fs.Int64Var(&cfg.seed, "seed", 7, "seed of the sensor readings")
	fs.StringVar(&cfg.store, "store", "", "where to keep the records: memory, sqlite (with --db) or postgres (with --dsn); default sqlite with --db, else memory")
	fs.StringVar(&cfg.db, "db", "", "SQLite file to keep the records in")
	fs.StringVar(&cfg.dsn, "dsn", "", "PostgreSQL DSN (postgres://user:password@host:port/database) to keep the records at")
	fs.StringVar(&cfg.ns, "namespace", "multi_episode", "namespace of this application's records, learned constraints included, in a shared store")
	return fs
}

func usage() string {
	var b strings.Builder
	fs := newFlags(&config{})
	fs.SetOutput(&b)
	b.WriteString("usage: multi_episode [--episodes N] [--seed S] [--store memory|sqlite|postgres] [--db FILE] [--dsn DSN] [--namespace NAME]\n")
	fs.PrintDefaults()
	return b.String()
}

// parseArgs reads the command line. Errors wrap errUsage (or are
// flag.ErrHelp for -h).
func parseArgs(args []string) (config, error) {
	var cfg config
	fs := newFlags(&cfg)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, err
		}
		return cfg, fmt.Errorf("%w: %w", errUsage, err)
	}
	switch {
	case fs.NArg() > 0:
		return cfg, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	case cfg.episodes < 1:
		return cfg, fmt.Errorf("%w: --episodes must be at least 1, not %d", errUsage, cfg.episodes)
	}
	var err error
	if cfg.store, err = storeflag.Resolve(cfg.store, cfg.db, cfg.dsn); err != nil {
		return cfg, fmt.Errorf("%w: %w", errUsage, err)
	}
	if err := storeflag.CheckDir(cfg.db); err != nil {
		return cfg, fmt.Errorf("%w: %w", errUsage, err)
	}
	return cfg, nil
}

// run is the whole program: it parses args, runs the episodes and writes
// the report to stdout. A bad command line is an error wrapping errUsage,
// returned before anything is opened or written.
func run(ctx context.Context, args []string, stdout io.Writer) (err error) {
	cfg, err := parseArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		_, err = io.WriteString(stdout, usage())
		return err
	}
	if err != nil {
		return err
	}
	var store store.Store
	storeName := "memory"
	switch cfg.store {
	case "memory":
		store = memstore.New()
	case "sqlite":
		// Checked whole first: nothing is written into a damaged file.
		s, err := sqlitestore.Open(ctx, cfg.db, sqlitestore.WithCheck())
		if err != nil {
			return fmt.Errorf("database %s: %w", cfg.db, err)
		}
		store, storeName = s, "sqlite "+cfg.db
	case "postgres":
		s, err := pgstore.Open(ctx, cfg.dsn)
		if err != nil {
			return err
		}
		// Not the DSN, which may hold a password.
		store, storeName = s, "postgres (schema "+s.Schema()+")"
	}
	defer func() {
		if cerr := store.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("closing the %s store: %w", storeName, cerr))
		}
	}()

	d, err := newDemo(ctx, store, cfg.seed, cfg.ns)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, d.k.Close()) }()
	out := &printer.Writer{W: stdout}
	fmt.Fprintf(out, "Multi-episode demo: %d episodes, seed %d, store %s\n", cfg.episodes, cfg.seed, storeName)
	if err := d.run(ctx, cfg.episodes, out); err != nil {
		return err
	}
	return out.Err
}

// demo is the monitor: a kernel, its five workers and the orchestrator
// running them, one trace per episode.
type demo struct {
	k         *kernel.Kernel
	tool      kernel.Handle
	symbolic  *kernel.Symbolic
	learner   *adaptive.Learner
	o         *orchestrator.Orchestrator
	episodes  map[string]int // trace id -> episode index
	startedOn []adaptive.Lesson
}

func newDemo(ctx context.Context, store store.Store, seed int64, namespace string) (*demo, error) {
	rules, err := sim.LoadRules(strings.NewReader(rulesJSON))
	if err != nil {
		return nil, err
	}
	k, err := kernel.New(kernel.Config{Store: store, Namespace: namespace, ActionSpecs: []kernel.ActionSpec{{
		Type:              actionAlert,
		MinBeliefs:        []string{beliefAnomaly},
		RequirePrediction: true,
	}}})
	if err != nil {
		return nil, err
	}
	d := &demo{k: k, tool: k.Handle(blackboard.RoleTool, "sensor"), symbolic: k.Symbolic("adaptive"), episodes: map[string]int{}}
	fail := func(err error) (*demo, error) {
		_ = k.Close()
		return nil, err
	}
	simulator, err := sim.New(k.Proposer(blackboard.RoleSimulator, "simulator"), rules)
	if err != nil {
		return fail(err)
	}
	if d.learner, err = adaptive.New(ctx, d.symbolic, adaptive.WithThreshold(2)); err != nil {
		return fail(err)
	}
	d.startedOn = d.learner.Learned()
	if d.o, err = orchestrator.New(orchestrator.WithPersistentView()); err != nil {
		return fail(err)
	}
	s := &sensor{tool: d.tool, read: func(traceID string) (reading, bool) {
		ep, ok := d.episodes[traceID]
		return readingFor(seed, ep), ok
	}}
	if err := d.o.Register(s, &analyst{k.Proposer(blackboard.RolePlanner, "analyst")}, simulator, &actuator{k.Proposer(blackboard.RolePlanner, "actuator")}, d.learner.Worker()); err != nil {
		return fail(err)
	}
	return d, nil
}

// Episode outcomes.
const (
	statusAlert    = "ALERT"
	statusReview   = "REVIEW"
	statusNoAction = "NO_ACTION"
)

// row is what the kernel decided in one episode, read back from its trace.
type row struct {
	episode     int
	reading     reading
	belief      bool
	prediction  *float64
	status      string
	reason      string   // the code a review was queued for
	constraints []string // constraints in force, by name
	learned     []learnedNow
	codes       []reason.Code // rejection codes recorded in the trace
}

// learnedNow is a constraint the learner committed in an episode.
type learnedNow struct {
	name  string
	code  string
	count int
}

func (d *demo) run(ctx context.Context, episodes int, w io.Writer) error {
	if len(d.startedOn) > 0 {
		names := make([]string, len(d.startedOn))
		for i, x := range d.startedOn {
			names[i] = x.Constraint.Name
		}
		noun := "constraints"
		if len(names) == 1 {
			noun = "constraint"
		}
		fmt.Fprintf(w, "Starting with %d %s already learned: [%s]\n", len(names), noun, strings.Join(names, " "))
	}
	counts := map[string]int{}
	codes := map[reason.Code]int{}
	var learned []string
	prev := ""
	for ep := range episodes {
		if ep > 0 {
			if _, err := d.learner.Analyze(ctx, prev); err != nil {
				return err
			}
		}
		// Each episode is a trace of its own, with a fresh id: records of
		// persistent scope (learned constraints) are what carries over.
		traceID := uuid.NewString()
		d.episodes[traceID] = ep
		res, err := d.o.Run(ctx, traceID)
		if err != nil {
			return err
		}
		if len(res.Errors) > 0 {
			errs := make([]error, len(res.Errors))
			for i, e := range res.Errors {
				errs[i] = e
			}
			return fmt.Errorf("episode %d: %w", ep, errors.Join(errs...))
		}
		r, err := d.read(ctx, ep, res)
		if err != nil {
			return fmt.Errorf("episode %d: %w", ep, err)
		}
		if len(r.learned) > 0 {
			names, why := make([]string, len(r.learned)), make([]string, len(r.learned))
			for i, x := range r.learned {
				names[i], why[i] = x.name, fmt.Sprintf("%s x%d", x.code, x.count)
				learned = append(learned, x.name)
			}
			fmt.Fprintf(w, "  >> LEARNED: [%s] (before episode %d; %s)\n", strings.Join(names, " "), ep, strings.Join(why, ", "))
		}
		fmt.Fprintln(w, r)
		counts[r.status]++
		for _, c := range r.codes {
			codes[c]++
		}
		prev = res.View.TraceID
	}
	fmt.Fprintf(w, "Summary: %d episodes | ALERT=%d REVIEW=%d NO_ACTION=%d\n",
		episodes, counts[statusAlert], counts[statusReview], counts[statusNoAction])
	fmt.Fprintf(w, "Constraints learned: %d [%s]", len(learned), strings.Join(learned, " "))
	if len(d.startedOn) > 0 {
		fmt.Fprintf(w, " (plus %d already in the store)", len(d.startedOn))
	}
	fmt.Fprintln(w)
	seen := make([]string, 0, len(codes))
	for _, c := range slices.Sorted(maps.Keys(codes)) {
		seen = append(seen, fmt.Sprintf("%s=%d", c, codes[c]))
	}
	fmt.Fprintf(w, "Codes seen: %s\n", strings.Join(seen, " "))
	return nil
}

// read builds an episode's row from the kernel's records of its trace.
func (d *demo) read(ctx context.Context, ep int, res orchestrator.Summary) (row, error) {
	r := row{episode: ep, status: statusNoAction}
	v := res.View
	p, err := d.tool.Find(ctx, res.View.TraceID, blackboard.Percepts, kindTemperature)
	if err != nil {
		return r, err
	}
	r.reading.Value, _ = p.Payload.Float("value")
	r.reading.Stale = p.Payload.Bool("stale")
	r.reading.Conflict = p.Payload.Bool("conflict")
	if c := p.Provenance.Confidence; c != nil {
		r.reading.Confidence = *c
	}
	r.belief = v.Has(blackboard.Beliefs, beliefAnomaly)
	for _, kind := range slices.Sorted(maps.Keys(v.Committed[blackboard.Predictions])) {
		pred := v.Committed[blackboard.Predictions][kind]
		if t, _ := pred["action_type"].(string); t == actionAlert {
			if x, ok := pred.Float("expected_outcome"); ok {
				r.prediction = &x
			}
		}
	}
	switch {
	case v.Has(blackboard.Actions, actionAlert):
		r.status = statusAlert
	case v.Has(blackboard.Actions, actionReview):
		r.status = statusReview
		review, _ := v.Committed[blackboard.Actions][actionReview]
		r.reason, _ = review["reason"].(string)
	}
	r.constraints = slices.Sorted(maps.Keys(v.Committed[blackboard.Constraints]))
	for rec, err := range worker.Own(ctx, d.symbolic, res.View.TraceID) {
		if err != nil {
			return r, err
		}
		if rec.Slot == blackboard.Constraints && rec.Scope == blackboard.ScopePersistent {
			name, _ := rec.Payload["name"].(string)
			code, _ := rec.Payload["learned_from"].(string)
			n, _ := rec.Payload.Float("trigger_count")
			r.learned = append(r.learned, learnedNow{name: name, code: code, count: int(n)})
		}
	}
	for rec, err := range d.tool.Trace(ctx, res.View.TraceID) {
		if err != nil {
			return r, err
		}
		if rec.Status == blackboard.StatusInvalidated && rec.Reason != reason.SupersededByCommit {
			r.codes = append(r.codes, rec.Reason)
		}
	}
	return r, nil
}

// String renders the row:
//
//	Ep 2  | temp=108.0 stale=False conf=0.51 conflict=False | belief=Y pred=+1.0 | ALERT     | constraints=[]
func (r row) String() string {
	pred := "-"
	if r.prediction != nil {
		pred = fmt.Sprintf("%+.1f", *r.prediction)
	}
	s := fmt.Sprintf("Ep %-2d | temp=%5.1f stale=%-5s conf=%.2f conflict=%-5s | belief=%s pred=%-4s | %-9s | constraints=[%s]",
		r.episode, r.reading.Value, pyBool(r.reading.Stale), r.reading.Confidence, pyBool(r.reading.Conflict),
		yn(r.belief), pred, r.status, strings.Join(r.constraints, " "))
	if r.reason != "" {
		s += " reason=" + r.reason
	}
	return s
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

func yn(b bool) string {
	if b {
		return "Y"
	}
	return "N"
}
