package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/blackboardkernel/bk/bench/study"
	"github.com/blackboardkernel/bk/internal/cmdline"
	"github.com/blackboardkernel/bk/internal/printer"
	"github.com/blackboardkernel/bk/internal/storeflag"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/pgstore"
	"github.com/blackboardkernel/bk/store/sqlitestore"
)

// GCPercent is the garbage collector's target the bench program runs with
// (debug.SetGCPercent) unless GOGC is set. A run's live heap stays under a
// megabyte, so the runtime's default aims at its 4 MB minimum and collects
// every few milliseconds; with two workers allocating, those collections'
// pauses and assists cost more than the episodes gain (on two cores
// --parallel 2 then saved almost no time and cost 40 % more CPU). A 16 MB
// target makes them four times rarer; a serial run's CPU time does not
// change (docs/performance.md).
const GCPercent = 400

// ErrUsage is wrapped by the error [Run] returns for bad flags or
// arguments (the study's own configuration errors wrap the study's
// sentinels instead). It wraps [cmdline.ErrUsage]: the program exits 2.
var ErrUsage = fmt.Errorf("bench: %w", cmdline.ErrUsage)

// options are the parsed flags.
type options struct {
	cfg    study.Config
	out    string
	report string
	store  string // memory, sqlite or postgres, resolved
	db     string
	dsn    string
	// storeName names the run's shared store in errors and output: the
	// SQLite file, or the PostgreSQL schema (never the DSN, which may hold
	// a password).
	storeName  string
	taskDir    string
	cpuProfile string
	memProfile string
	// agentsNamed: --agents was given (else the default agents ran).
	agentsNamed bool
}

// parse reads the flags; getenv supplies BK_LLM_URL, BK_LLM_MODEL and
// BK_LLM_API_KEY, which the flags override. -h prints the usage to stdout;
// a bad flag or an argument prints the error and the usage to stderr.
func parse(args []string, getenv func(string) string, stdout, stderr io.Writer) (*options, error) {
	o := &options{cfg: study.DefaultConfig()}
	c := &o.cfg
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.IntVar(&c.Seeds, "seeds", c.Seeds, "seeds per task")
	fs.IntVar(&c.FirstSeed, "seed", 0, "first seed: the run plays seeds S … S+N-1 of every task (the seed the faults are drawn from)")
	tasks := fs.String("tasks", "all", "comma-separated task ids, or all")
	agents := fs.String("agents", "", "comma-separated agents (default string_glue,json_glue,bk, plus llm_bk with an LLM endpoint; adversarial_bk on request)")
	fs.StringVar(&o.taskDir, "task-dir", "", "load the task JSON files from this directory instead of the built-in ones")
	fs.StringVar(&o.out, "out", "results.jsonl", `JSON lines output file ("" for none)`)
	fs.StringVar(&o.report, "report", "", "write a markdown report to this file")
	fs.Float64Var(&c.Rates.Stale, "stale", c.Rates.Stale, "stale perturbation rate")
	fs.Float64Var(&c.Rates.Conflict, "conflict", c.Rates.Conflict, "conflict perturbation rate")
	fs.Float64Var(&c.Rates.LowConfidence, "low-confidence", c.Rates.LowConfidence, "low-confidence perturbation rate")
	fs.Float64Var(&c.Rates.Drop, "tool-drop", c.Rates.Drop, "tool failure (drop) rate")
	fs.StringVar(&o.store, "store", "", "memory (a fresh kernel per episode), sqlite (one store for the run, in --db) or postgres (one store for the run, at --dsn); default memory, or sqlite with --db")
	fs.StringVar(&o.db, "db", "", "SQLite database file (implies --store sqlite)")
	fs.StringVar(&o.dsn, "dsn", "", "PostgreSQL DSN (postgres://user:password@host:port/database) to keep the records at (with --store postgres)")
	fs.IntVar(&c.Parallel, "parallel", c.Parallel, "episodes in flight")
	fs.StringVar(&c.LLM.URL, "llm-url", getenv("BK_LLM_URL"), "OpenAI-compatible endpoint for llm_bk (env BK_LLM_URL)")
	fs.StringVar(&c.LLM.Model, "llm-model", getenv("BK_LLM_MODEL"), "model name (env BK_LLM_MODEL)")
	fs.StringVar(&c.LLM.APIKey, "llm-api-key", "", "API key (env BK_LLM_API_KEY; never printed)")
	fs.StringVar(&c.LLM.ReasoningEffort, "reasoning-effort", "", "reasoning_effort passed to the model (low, medium, high)")
	fs.IntVar(&c.LLM.Concurrency, "llm-concurrency", c.LLM.Concurrency, "LLM requests in flight")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile to this file")
	fs.StringVar(&o.memProfile, "memprofile", "", "write a heap profile to this file")
	fs.BoolVar(&c.Steps, "steps", false, "number the report's trace lines t0, t1, … as the paper prints its traces")
	scoring := fs.String("scoring", string(study.ScoringGroundTruth), "ground_truth (faults as the perturbation injected them) or paper (faults as the charge the agent held says, as the paper's artifact scored)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: bench [flags]\n\nReproduces the paper's refund study: Table 3, Table 4, what they mean, the files written.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := cmdline.Parse(fs, args, 0, stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	c.Scoring = study.Scoring(*scoring)
	if c.LLM.APIKey == "" {
		c.LLM.APIKey = getenv("BK_LLM_API_KEY")
	}
	var err error
	if *tasks != "all" {
		if c.Tasks, err = list("tasks", *tasks); err != nil {
			return nil, err
		}
	}
	if *agents != "" {
		if c.Agents, err = list("agents", *agents); err != nil {
			return nil, err
		}
	}
	if c.LLM.Concurrency < 1 {
		return nil, fmt.Errorf("%w: --llm-concurrency %d must be at least 1", ErrUsage, c.LLM.Concurrency)
	}
	o.agentsNamed = *agents != ""
	if o.store, err = storeKind(o.store, o.db, o.dsn); err != nil {
		return nil, err
	}
	return o, nil
}

// storeKind resolves --store, --db and --dsn as the examples do
// (internal/storeflag).
func storeKind(store, db, dsn string) (string, error) {
	kind, err := storeflag.Resolve(store, db, dsn)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrUsage, err)
	}
	return kind, nil
}

// list splits a comma-separated flag value, refusing empty items.
func list(flagName, v string) ([]string, error) {
	items := strings.Split(v, ",")
	for i, s := range items {
		items[i] = strings.TrimSpace(s)
		if items[i] == "" {
			return nil, fmt.Errorf("%w: --%s %q has an empty item", ErrUsage, flagName, v)
		}
	}
	return items, nil
}

// Run runs the benchmark with the given arguments (without the program
// name). Tables, what they mean, the files written and the timing go to
// stdout, progress and usage to stderr. -h prints the usage and returns
// flag.ErrHelp. Bad flags return an error wrapping [ErrUsage]; a bad study
// configuration one wrapping the study's sentinels (study.ErrUnknownTask,
// ...). Both are found before any file is created or truncated.
//
// Output files are written to temporary files beside them and renamed into
// place when the run succeeds: a run that fails leaves an earlier file of
// the same name untouched.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) (err error) {
	start := time.Now()
	cpuStart, cpuOK := cpuTime()
	o, err := parse(args, getenv, stdout, stderr)
	if err != nil {
		return err
	}
	if o.taskDir != "" {
		o.cfg.TaskFS = os.DirFS(o.taskDir)
	}
	o.cfg.Progress = stderr
	o.cfg.Traces = o.report != ""
	if err := o.cfg.Validate(); err != nil {
		return err
	}
	if err := o.checkPaths(); err != nil {
		return err
	}
	// An endpoint that cannot answer fails the run now, before any file
	// is created, rather than as LLM_ERROR in every llm_bk episode.
	if o.runsLLM() {
		fmt.Fprintf(stderr, "bench: checking the LLM endpoint %s ...\n", o.cfg.LLM.URL)
		if err := study.CheckEndpoint(ctx, o.cfg.LLM); err != nil {
			return err
		}
	}

	// The database next, checked whole, before any output file exists.
	store, err := o.openStore(ctx)
	if err != nil {
		return err
	}
	if store != nil {
		defer func() {
			if cerr := store.Close(); cerr != nil {
				err = errors.Join(err, fmt.Errorf("database %s: %w", o.storeName, cerr))
			}
		}()
		o.cfg.Store = store
		if o.cfg.RunID, err = newRunID(); err != nil {
			return err
		}
	}

	var files []*output // committed, in this order, when the run succeeds
	defer func() {
		if err != nil {
			for _, f := range files {
				f.abort()
			}
		}
	}()
	open := func(path string) (*output, error) {
		f, err := create(path)
		if err == nil {
			files = append(files, f)
		}
		return f, err
	}
	out := io.Writer(io.Discard)
	if o.out != "" {
		f, err := open(o.out)
		if err != nil {
			return err
		}
		out = f
	}
	var report *output
	if o.report != "" {
		if report, err = open(o.report); err != nil {
			return err
		}
	}
	if o.cpuProfile != "" {
		f, err := open(o.cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f.f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile() // before the files are committed (deferred later)
	}
	sum, err := study.Run(ctx, o.cfg, out)
	if err != nil {
		if store != nil && !errors.Is(err, ctx.Err()) && !isWriteError(err) {
			err = fmt.Errorf("database %s: %w", o.storeName, err)
		}
		return err
	}
	// An endpoint that answered the check and then nothing usable: llm_bk's
	// row would measure the outage, so the run fails and writes nothing.
	if n := sum.AgentEpisodes(study.AgentLLMBK); n > 0 && sum.LLMErrors == n {
		return fmt.Errorf("%w: %s: every llm_bk episode (%d) ended in LLM_ERROR: the model gave no usable answer", study.ErrEndpoint, o.cfg.LLM.URL, n)
	}
	pprof.StopCPUProfile()
	if report != nil {
		if err := writeReport(report, o, sum); err != nil {
			return err
		}
	}
	if o.memProfile != "" {
		f, err := open(o.memProfile)
		if err != nil {
			return err
		}
		runtime.GC()
		if err := pprof.WriteHeapProfile(f); err != nil {
			return err
		}
	}
	for _, f := range files {
		if err := f.commit(); err != nil {
			return err
		}
	}
	files = nil

	p := &printer.Writer{W: stdout}
	if err := sum.WriteTables(p); err != nil {
		return err
	}
	p.Printf("\n")
	if err := sum.WriteNotes(p); err != nil {
		return err
	}
	if note := o.skipped(sum); note != "" {
		p.Printf("\n%s\n", note)
	}
	if sum.LLMErrors > 0 {
		p.Printf("\nllm_bk: %d of %d episodes ended in LLM_ERROR (the model gave no usable answer: the endpoint failed after its retries, or answered something that is not advice); they measure the endpoint, not the model.\n",
			sum.LLMErrors, sum.AgentEpisodes(study.AgentLLMBK))
	}
	p.Printf("\n%s", o.written(sum))
	wall := time.Since(start)
	cpu := "CPU time not measured on this system"
	if now, ok := cpuTime(); ok && cpuOK {
		cpu = fmt.Sprintf("%s CPU", (now - cpuStart).Round(time.Millisecond))
	}
	p.Printf("%d episodes in %s wall time, %s (study %s wall), %.0f episodes/s\n",
		sum.Episodes, wall.Round(time.Millisecond), cpu, sum.Elapsed.Round(time.Millisecond), float64(sum.Episodes)/wall.Seconds())
	return p.Err
}

// checkPaths refuses output paths the run could not write, and one file
// named for two outputs, before anything runs.
func (o *options) checkPaths() error {
	seen := map[string]string{}
	for _, f := range []struct{ flag, path string }{
		{"out", o.out}, {"report", o.report}, {"cpuprofile", o.cpuProfile}, {"memprofile", o.memProfile}, {"db", o.db},
	} {
		if f.path == "" {
			continue
		}
		if err := checkPath(f.flag, f.path); err != nil {
			return err
		}
		abs, err := filepath.Abs(f.path)
		if err != nil {
			return fmt.Errorf("%w: --%s %s: %v", ErrUsage, f.flag, f.path, err)
		}
		if other, ok := seen[abs]; ok {
			return fmt.Errorf("%w: --%s and --%s name the same file %s", ErrUsage, other, f.flag, f.path)
		}
		seen[abs] = f.flag
	}
	return nil
}

// runsLLM reports whether the run plays llm_bk.
func (o *options) runsLLM() bool {
	agents := o.cfg.Agents
	if len(agents) == 0 {
		agents = study.DefaultAgents(o.cfg.LLM)
	}
	return slices.Contains(agents, study.AgentLLMBK)
}

// skipped says why llm_bk did not run, when it did not.
func (o *options) skipped(sum *study.Summary) string {
	if slices.Contains(sum.Agents, study.AgentLLMBK) {
		return ""
	}
	if !o.cfg.LLM.Enabled() {
		return "llm_bk was skipped: no LLM endpoint is configured (set --llm-url or BK_LLM_URL to run it)."
	}
	return "llm_bk was skipped: an LLM endpoint is configured, but --agents does not name llm_bk."
}

// written names the files the run wrote, one line each.
func (o *options) written(sum *study.Summary) string {
	var b strings.Builder
	if o.out != "" {
		fmt.Fprintf(&b, "Wrote %s: %d JSON lines, one per episode.\n", o.out, sum.Episodes)
	} else {
		b.WriteString("No JSON lines written (--out \"\").\n")
	}
	if o.report != "" {
		fmt.Fprintf(&b, "Wrote %s: the markdown report.\n", o.report)
	}
	if o.cpuProfile != "" {
		fmt.Fprintf(&b, "Wrote %s: the CPU profile.\n", o.cpuProfile)
	}
	if o.memProfile != "" {
		fmt.Fprintf(&b, "Wrote %s: the heap profile.\n", o.memProfile)
	}
	if o.storeName != "" {
		fmt.Fprintf(&b, "Episodes stored in the database %s (trace ids start with %s).\n", o.storeName, o.cfg.RunID)
	}
	return b.String()
}

// isWriteError reports whether err came from writing an output file.
func isWriteError(err error) bool {
	var we *writeError
	return errors.As(err, &we)
}

// openStore returns the run's shared store: nil for memory (each episode
// gets a fresh in-memory kernel). It sets o.storeName; an error names the
// database (the file, or for PostgreSQL the store, never the DSN).
func (o *options) openStore(ctx context.Context) (store.Store, error) {
	switch o.store {
	case "sqlite":
		o.storeName = o.db
		// Checked whole first: the run writes nothing into a damaged file.
		s, err := sqlitestore.Open(ctx, o.db, sqlitestore.WithCheck())
		if err != nil {
			return nil, fmt.Errorf("database %s: %w", o.db, err)
		}
		return s, nil
	case "postgres":
		s, err := pgstore.Open(ctx, o.dsn)
		if err != nil {
			return nil, fmt.Errorf("database postgres: %w", err)
		}
		o.storeName = "postgres (schema " + s.Schema() + ")"
		return s, nil
	}
	return nil, nil
}

// newRunID returns a random id that keeps the traces of runs into one
// store apart.
func newRunID() (string, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "run-" + hex.EncodeToString(b[:]), nil
}

// writeReport writes the markdown report to f.
func writeReport(f io.Writer, o *options, sum *study.Summary) error {
	r := o.cfg.Rates
	params := fmt.Sprintf("%d seeds per task from seed %d; rates: drop %g, stale %g, conflict %g, low confidence %g; store %s; scoring %s.",
		sum.Seeds, o.cfg.FirstSeed, r.Drop, r.Stale, r.Conflict, r.LowConfidence, o.store, sum.Scoring)
	return sum.WriteReport(f, params)
}
