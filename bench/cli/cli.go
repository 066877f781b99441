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
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/blackboardkernel/bk/bench/study"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/store/sqlitestore"
)

// ErrUsage is wrapped by the error [Run] returns for bad flags or
// arguments (the study's own configuration errors wrap the study's
// sentinels instead).
var ErrUsage = errors.New("bench: usage")

// options are the parsed flags.
type options struct {
	cfg        study.Config
	out        string
	report     string
	store      string
	db         string
	taskDir    string
	cpuProfile string
	memProfile string
}

// parse reads the flags; getenv supplies BK_LLM_URL, BK_LLM_MODEL and
// BK_LLM_API_KEY, which the flags override.
func parse(args []string, getenv func(string) string, stderr io.Writer) (*options, error) {
	o := &options{cfg: study.DefaultConfig()}
	c := &o.cfg
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&c.Seeds, "seeds", c.Seeds, "seeds per task")
	tasks := fs.String("tasks", "all", "comma-separated task ids, or all")
	agents := fs.String("agents", "", "comma-separated agents (default string_glue,json_glue,bk, plus llm_bk with an LLM endpoint; adversarial_bk on request)")
	fs.StringVar(&o.taskDir, "task-dir", "", "load the task JSON files from this directory instead of the built-in ones")
	fs.StringVar(&o.out, "out", "results.jsonl", `JSON lines output file ("" for none)`)
	fs.StringVar(&o.report, "report", "", "write a markdown report to this file")
	fs.Float64Var(&c.Rates.Stale, "stale", c.Rates.Stale, "stale perturbation rate")
	fs.Float64Var(&c.Rates.Conflict, "conflict", c.Rates.Conflict, "conflict perturbation rate")
	fs.Float64Var(&c.Rates.LowConfidence, "low-confidence", c.Rates.LowConfidence, "low-confidence perturbation rate")
	fs.Float64Var(&c.Rates.Drop, "tool-drop", c.Rates.Drop, "tool failure (drop) rate")
	fs.StringVar(&o.store, "store", "memory", "memory (a fresh kernel per episode) or sqlite (one store, --db)")
	fs.StringVar(&o.db, "db", "", "SQLite database file for --store sqlite")
	fs.IntVar(&c.Parallel, "parallel", c.Parallel, "episodes in flight")
	fs.StringVar(&c.LLM.URL, "llm-url", getenv("BK_LLM_URL"), "OpenAI-compatible endpoint for llm_bk (env BK_LLM_URL)")
	fs.StringVar(&c.LLM.Model, "llm-model", getenv("BK_LLM_MODEL"), "model name (env BK_LLM_MODEL)")
	fs.StringVar(&c.LLM.APIKey, "llm-api-key", "", "API key (env BK_LLM_API_KEY; never printed)")
	fs.StringVar(&c.LLM.ReasoningEffort, "reasoning-effort", "", "reasoning_effort passed to the model (low, medium, high)")
	fs.IntVar(&c.LLM.Concurrency, "llm-concurrency", c.LLM.Concurrency, "LLM requests in flight")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile to this file")
	fs.StringVar(&o.memProfile, "memprofile", "", "write a heap profile to this file")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%w: unexpected argument %q", ErrUsage, fs.Arg(0))
	}
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
	switch {
	case o.store != "memory" && o.store != "sqlite":
		return nil, fmt.Errorf("%w: --store %q (valid: memory, sqlite)", ErrUsage, o.store)
	case o.store == "sqlite" && o.db == "":
		return nil, fmt.Errorf("%w: --store sqlite needs --db FILE", ErrUsage)
	case o.store == "memory" && o.db != "":
		return nil, fmt.Errorf("%w: --db needs --store sqlite", ErrUsage)
	}
	return o, nil
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
// name). Tables and timing go to stdout, progress and usage to stderr.
// -h prints the usage and returns flag.ErrHelp. Bad flags return an error
// wrapping [ErrUsage]; a bad study configuration one wrapping the study's
// sentinels (study.ErrUnknownTask, ...).
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) (err error) {
	start := time.Now()
	o, err := parse(args, getenv, stderr)
	if err != nil {
		return err
	}
	if o.taskDir != "" {
		o.cfg.TaskFS = os.DirFS(o.taskDir)
	}
	o.cfg.Progress = stderr
	o.cfg.Traces = o.report != ""
	if err := o.cfg.Validate(); err != nil {
		return err // before any file is created or truncated
	}
	store, err := openStore(o.store, o.db)
	if err != nil {
		return err
	}
	if store != nil {
		defer func() { err = errors.Join(err, store.Close()) }()
		o.cfg.Store = store
		if o.cfg.RunID, err = newRunID(); err != nil {
			return err
		}
	}
	out := io.Discard
	if o.out != "" {
		f, err := os.Create(o.out)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, f.Close()) }()
		out = f
	}
	if o.cpuProfile != "" {
		stop, err := startCPUProfile(o.cpuProfile)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, stop()) }()
	}
	sum, err := study.Run(ctx, o.cfg, out)
	if err != nil {
		return err
	}
	if o.memProfile != "" {
		if err := writeHeapProfile(o.memProfile); err != nil {
			return err
		}
	}
	if err := sum.WriteTables(stdout); err != nil {
		return err
	}
	if o.report != "" {
		if err := writeReport(o, sum); err != nil {
			return err
		}
	}
	wall := time.Since(start)
	_, err = fmt.Fprintf(stdout, "\n%d episodes in %s wall time (study %s), %.0f episodes/s\n",
		sum.Episodes, wall.Round(time.Millisecond), sum.Elapsed.Round(time.Millisecond), float64(sum.Episodes)/wall.Seconds())
	return err
}

// openStore returns the run's shared store: nil for memory (each episode
// gets a fresh in-memory kernel).
func openStore(kind, db string) (kernel.Store, error) {
	if kind == "sqlite" {
		return sqlitestore.Open(db)
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

func writeReport(o *options, sum *study.Summary) (err error) {
	f, err := os.Create(o.report)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	r := o.cfg.Rates
	params := fmt.Sprintf("%d seeds per task; rates: drop %g, stale %g, conflict %g, low confidence %g; store %s.",
		sum.Seeds, r.Drop, r.Stale, r.Conflict, r.LowConfidence, o.store)
	return sum.WriteReport(f, params)
}

func startCPUProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

func writeHeapProfile(path string) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	runtime.GC()
	return pprof.WriteHeapProfile(f)
}
