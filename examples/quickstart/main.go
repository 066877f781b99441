// Command quickstart replays the paper's two baseline walkthroughs (§7.1
// stale evidence, §7.2 conflicting evidence at confidence 0.8 and 0.3) on the
// kernel and prints each episode with inspect.Timeline, as the paper's
// representative traces (§10.4–10.5) read: every line is read back from
// the records the kernel stored.
//
//	go run ./examples/quickstart [--store memory|sqlite|postgres] [--db FILE] [--dsn DSN] [--steps]
//
// --store, --db and --dsn mean what they mean for the bench and the other
// examples: the records stay in memory unless --db names a SQLite file
// (--store sqlite needs --db; --db alone selects it) or --store postgres
// names a PostgreSQL database with --dsn (the store's tables go in the
// connection's current schema; the DSN is never printed). The walkthrough
// is the same either way; a database that already holds its traces is
// refused, since replaying into them would not be the paper's episodes.
// There is no --seed: nothing here is drawn at random. --steps leads each
// event with its step of the paper's loop (t0–t9), as the paper prints
// its traces. Exit codes: 0 done, 1 failed, 2 a wrong command line.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/inspect"
	"github.com/blackboardkernel/bk/internal/cmdline"
	"github.com/blackboardkernel/bk/internal/storeflag"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/store/pgstore"
	"github.com/blackboardkernel/bk/store/sqlitestore"
)

func main() {
	err := run(context.Background(), os.Args[1:], os.Stdout)
	os.Exit(cmdline.Exit("quickstart", err, os.Stderr, usage))
}

// errUsage is wrapped by every error about the command line (exit 2).
var errUsage = cmdline.ErrUsage

// config is what the command line asks for.
type config struct {
	store, db, dsn string
	steps          bool
}

func newFlags(c *config) *flag.FlagSet {
	fs := flag.NewFlagSet("quickstart", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.store, "store", "", "memory, sqlite (with --db) or postgres (with --dsn); default sqlite with --db, else memory")
	fs.StringVar(&c.db, "db", "", "SQLite file to keep the records in (implies --store sqlite)")
	fs.StringVar(&c.dsn, "dsn", "", "PostgreSQL DSN (postgres://user:password@host:port/database) to keep the records at")
	fs.BoolVar(&c.steps, "steps", false, "lead each event with its step of the paper's loop (t0-t9), as the paper prints its traces")
	return fs
}

// usage prints the command line and its flags to w.
func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: quickstart [--store memory|sqlite|postgres] [--db FILE] [--dsn DSN] [--steps]")
	fs := newFlags(&config{})
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// parseArgs reads the command line; -h prints the usage to w and returns
// flag.ErrHelp.
func parseArgs(args []string, w io.Writer) (config, error) {
	var c config
	fs := newFlags(&c)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(w)
			return c, err
		}
		return c, fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	var err error
	if c.store, err = storeflag.Resolve(c.store, c.db, c.dsn); err != nil {
		return c, fmt.Errorf("%w: %w", errUsage, err)
	}
	if err := storeflag.CheckDir(c.db); err != nil {
		return c, fmt.Errorf("%w: %w", errUsage, err)
	}
	return c, nil
}

// scenario is one episode's input: the charge the payment tool observed.
type scenario struct {
	title, trace string
	charge       blackboard.Payload
	confidence   *float64
}

var scenarios = []scenario{
	{"§7.1 stale evidence", "stale", blackboard.Payload{"charge_id": "ch_7Q1y2B4D5E", "amount": 89.00, "stale": true}, nil},
	{"§7.2 conflicting evidence, arbitrated", "conflict-high", blackboard.Payload{"charge_id": "ch_5R2z3C6F7G", "amount": 249.50, "conflict": true}, new(0.8)},
	{"§7.2 conflicting evidence, unresolved", "conflict-low", blackboard.Payload{"charge_id": "ch_5R2z3C6F7G", "amount": 249.50, "conflict": true}, new(0.3)},
}

// run parses args and plays every scenario on one kernel with a fixed
// clock, so the output is the same on every run. A bad command line is an
// error wrapping errUsage, returned before anything is opened.
func run(ctx context.Context, args []string, w io.Writer) (err error) {
	cfg, err := parseArgs(args, w)
	if err != nil {
		return err
	}
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var s store.Store = memstore.New()
	name := "memory"
	if cfg.store != "memory" {
		if s, name, err = openDB(ctx, cfg); err != nil {
			return err // the memory store holds nothing to close
		}
	}
	// The store is ours: closed last, after the kernel (deferred below);
	// closing it is what leaves a SQLite file whole without its -wal.
	defer func() {
		if cerr := s.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("database %s: %w", name, cerr))
		}
	}()
	k, err := kernel.New(kernel.Config{Store: s, Clock: func() time.Time { return start }})
	if err != nil {
		return err
	}
	defer k.Close()
	for i, sc := range scenarios {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := play(ctx, k, s, w, sc, cfg.steps); err != nil {
			return fmt.Errorf("%s: %w", sc.title, err)
		}
	}
	return nil
}

// openDB opens the SQLite file or the PostgreSQL database and refuses one
// that already holds the walkthrough's traces. It returns the store's name
// for errors: the file, or the PostgreSQL schema, never the DSN (which may
// hold a password). Errors name the database.
func openDB(ctx context.Context, cfg config) (store.Store, string, error) {
	var s store.Store
	name := cfg.db
	if cfg.store == "postgres" {
		ps, err := pgstore.Open(ctx, cfg.dsn)
		if err != nil {
			return nil, "", fmt.Errorf("database postgres: %w", err)
		}
		s, name = ps, "postgres (schema "+ps.Schema()+")"
	} else {
		// Checked whole first: nothing is written into a damaged file.
		ss, err := sqlitestore.Open(ctx, cfg.db, sqlitestore.WithCheck())
		if err != nil {
			return nil, "", fmt.Errorf("database %s: %w", cfg.db, err)
		}
		s = ss
	}
	for _, sc := range scenarios {
		for _, err := range s.ListTrace(ctx, blackboard.DefaultNamespace, sc.trace) {
			if err == nil {
				err = fmt.Errorf("it already holds trace %q from an earlier run; use a new one", sc.trace)
			}
			return nil, "", errors.Join(fmt.Errorf("database %s: %w", name, err), s.Close())
		}
	}
	return s, name, nil
}

// play is the paper's bk agent: constraint, percept, belief, plan, then the
// refund if the plan is feasible, else queue_for_review with the code that
// stopped it. It prints the episode as the records in s tell it.
func play(ctx context.Context, k *kernel.Kernel, s store.Store, w io.Writer, sc scenario, steps bool) error {
	tool, planner := k.Handle(blackboard.RoleTool, "payment_tool"), k.Proposer(blackboard.RolePlanner, "planner")
	if _, err := fmt.Fprintf(w, "%s\n", sc.title); err != nil {
		return err
	}
	if _, err := k.Symbolic("policy").CommitConstraint(ctx, sc.trace,
		kernel.Constraint{Name: "no_duplicate_refund", Enabled: true, BlocksField: "is_duplicate"}, blackboard.ScopeEpisode); err != nil {
		return err
	}
	if _, err := tool.Write(ctx, kernel.Entry{TraceID: sc.trace, Slot: blackboard.Percepts, Kind: "charge", Payload: sc.charge, Confidence: sc.confidence}); err != nil {
		return err
	}
	if _, err := planner.Submit(ctx, kernel.Entry{TraceID: sc.trace, Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"charge"}}}); err != nil {
		return err
	}
	p, err := planner.Submit(ctx, kernel.Entry{TraceID: sc.trace, Slot: blackboard.Plans, Kind: "action_plan",
		Payload: blackboard.Payload{"steps": []any{map[string]any{
			"action": "issue_refund", "requires_beliefs": []string{"refund_due"}, "is_duplicate": false}}}})
	if err != nil {
		return err
	}
	reason := p.Code
	if p.Committed() {
		a, err := planner.Submit(ctx, kernel.Entry{TraceID: sc.trace, Slot: blackboard.Actions, Kind: "issue_refund",
			Payload: blackboard.Payload{"charge_id": sc.charge["charge_id"], "amount": sc.charge["amount"], "is_duplicate": false,
				"requires_beliefs": []string{"refund_due"}}})
		if err != nil {
			return err
		}
		reason = a.Code
	}
	if !reason.OK() {
		// The safe fallback, with the code that stopped the refund.
		if _, err := planner.Submit(ctx, kernel.Entry{TraceID: sc.trace, Slot: blackboard.Actions, Kind: kernel.FallbackQueueForReview,
			Payload: blackboard.Payload{"reason": string(reason)}}); err != nil {
			return err
		}
	}
	// The kernel's own account of the episode, read back from the store.
	tl, err := inspect.Timeline(ctx, s, blackboard.DefaultNamespace, sc.trace)
	if err != nil {
		return err
	}
	if steps {
		return tl.WriteSteps(w)
	}
	_, err = fmt.Fprint(w, tl)
	return err
}
