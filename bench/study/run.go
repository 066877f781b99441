package study

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/blackboardkernel/bk/bench/perturb"
	"github.com/blackboardkernel/bk/kernel"
)

// Config is one run of the study. The zero value is not usable: start from
// [DefaultConfig].
type Config struct {
	// Seeds is the number of seeds per task (0 … Seeds-1).
	Seeds int
	// Tasks are the task ids to run, in order; empty means every task.
	Tasks []string
	// Agents are the agents to run, in order; empty means [DefaultAgents].
	Agents []string
	// Rates are the perturbation rates.
	Rates perturb.Rates
	// TaskFS holds the task files; nil means the built-in tasks.
	TaskFS fs.FS
	// Store, if set, receives every episode of the run through one kernel,
	// so history grows as it does in production; trace ids then start with
	// RunID. Nil gives each episode a fresh in-memory kernel. The caller
	// owns the store.
	Store kernel.Store
	// RunID prefixes trace ids ("<RunID>/<agent>/<task>/<seed>"); it keeps
	// runs into one store apart.
	RunID string
	// Parallel is how many episodes run at once (at least 1). When llm_bk
	// runs, at least LLM.Concurrency run at once. The output order does not
	// depend on it.
	Parallel int
	// LLM configures llm_bk.
	LLM LLMConfig
	// Traces keeps one rendered trace per agent and outcome for the report.
	Traces bool
	// Progress, if set, receives a progress line about every two seconds.
	Progress io.Writer
}

// DefaultConfig returns the paper's run: 50 seeds, every task, the default
// agents and rates, one episode at a time.
func DefaultConfig() Config {
	return Config{Seeds: 50, Rates: perturb.DefaultRates(), Parallel: 1, LLM: LLMConfig{Concurrency: 4}}
}

// Result is one episode: the JSON line the run writes.
type Result struct {
	TaskID  string  `json:"task_id"`
	Seed    int     `json:"seed"`
	Agent   string  `json:"agent"`
	Output  any     `json:"output"`
	Metrics Metrics `json:"metrics"`

	label string
	trace []string
}

// plan is a validated configuration.
type plan struct {
	tasks    []Task
	agents   []Agent
	seeds    int
	inFlight int
}

// Validate reports what [Run] would refuse in c, without running anything
// or touching c.Store: an error wrapping [ErrInvalidConfig],
// [ErrUnknownTask], [ErrUnknownAgent], [ErrInvalidTask] or
// [perturb.ErrInvalidRate].
func (c Config) Validate() error {
	c.Store = nil
	_, err := c.plan()
	return err
}

func (c Config) plan() (*plan, error) {
	if c.Seeds < 1 {
		return nil, fmt.Errorf("%w: seeds %d must be at least 1", ErrInvalidConfig, c.Seeds)
	}
	if c.Parallel < 1 {
		return nil, fmt.Errorf("%w: parallel %d must be at least 1", ErrInvalidConfig, c.Parallel)
	}
	if err := c.Rates.Validate(); err != nil {
		return nil, err
	}
	var all []Task
	var err error
	if c.TaskFS != nil {
		all, err = LoadTasks(c.TaskFS)
	} else {
		all, err = BuiltinTasks()
	}
	if err != nil {
		return nil, err
	}
	tasks, err := pick(all, c.Tasks)
	if err != nil {
		return nil, err
	}
	names := c.Agents
	if len(names) == 0 {
		names = DefaultAgents(c.LLM)
	}
	agents, err := newAgents(names, env{store: c.Store, llm: c.LLM})
	if err != nil {
		return nil, err
	}
	p := &plan{tasks: tasks, agents: agents, seeds: c.Seeds, inFlight: c.Parallel}
	if slices.Contains(names, AgentLLMBK) {
		p.inFlight = max(p.inFlight, c.LLM.Concurrency)
	}
	return p, nil
}

// pick returns the tasks with the given ids, in that order; none means all.
func pick(all []Task, ids []string) ([]Task, error) {
	if len(ids) == 0 {
		return all, nil
	}
	out := make([]Task, 0, len(ids))
	for i, id := range ids {
		j := slices.IndexFunc(all, func(t Task) bool { return t.ID == id })
		if j < 0 {
			valid := make([]string, len(all))
			for k, t := range all {
				valid[k] = t.ID
			}
			return nil, fmt.Errorf("%w %q (valid: %s)", ErrUnknownTask, id, strings.Join(valid, ", "))
		}
		if slices.Contains(ids[:i], id) {
			return nil, fmt.Errorf("%w: task %q listed twice", ErrInvalidConfig, id)
		}
		out = append(out, all[j])
	}
	return out, nil
}

// job is one episode to play.
type job struct {
	index int
	agent Agent
	ep    Episode
}

// Run plays every (task, seed, agent) episode of cfg, writes one JSON line
// per episode to out (in task, seed, agent order, whatever the
// parallelism) and returns the aggregates.
//
// The harness, not the agent, measures each episode, the same way for
// every agent: an episode is tainted when the perturbation injected a
// fault into its charge lookup (a drop included: acting on no observation
// is acting without evidence) and blocked when the task is a duplicate;
// what it did is the effect log of its [World], written when a glue agent
// calls the refund tool or when the harness's executor performs an action
// record committed in the episode's store. Task success, unsafe action and
// unsupported belief follow REPRODUCTION.md §4 on those facts (a second
// refund of a charge is unsafe too). Traceability is the share of the
// actions performed whose chain decision → plan/belief → evidence artifact
// → percept can be rebuilt by following the ids the kernel recorded; a
// fallback's chain ends at the rejected proposal and its code. Failure
// transparency is 1 when the agent acted correctly, or did not act and its
// fallback carries a registered reason code that the episode's records
// bear out; 0 otherwise.
//
// A bad configuration returns an error wrapping [ErrInvalidConfig],
// [ErrUnknownTask], [ErrUnknownAgent], [ErrInvalidTask] or
// [perturb.ErrInvalidRate] before any episode runs. An agent or write
// error stops the run and is returned, as is the context's error.
func Run(ctx context.Context, cfg Config, out io.Writer) (*Summary, error) {
	p, err := cfg.plan()
	if err != nil {
		return nil, err
	}
	sum := newSummary(p, cfg.Traces)
	total := len(p.tasks) * p.seeds * len(p.agents)
	start := time.Now()
	w := bufio.NewWriterSize(out, 64<<10)
	var line []byte
	prog := progress{w: cfg.Progress, total: total, start: start, last: start}

	emit := func(r *Result) error {
		sum.add(r)
		var err error
		if line, err = appendLine(line[:0], r); err != nil {
			return err
		}
		if _, err := w.Write(line); err != nil {
			return err
		}
		prog.tick(sum.Episodes, time.Now())
		return nil
	}
	jobs := p.jobs(cfg.Rates, cfg.RunID, cfg.Store, cfg.Traces)
	if p.inFlight == 1 {
		err = runSerial(ctx, jobs, emit)
	} else {
		err = runParallel(ctx, p.inFlight, jobs, emit)
	}
	if err != nil {
		return nil, err
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	sum.Elapsed = time.Since(start)
	return sum, nil
}

// jobs yields every episode of the plan in output order: task, seed,
// agent.
func (p *plan) jobs(rates perturb.Rates, runID string, store kernel.Store, keepTrace bool) func(yield func(job) bool) {
	return func(yield func(job) bool) {
		i := 0
		for ti := range p.tasks {
			t := &p.tasks[ti]
			for seed := range p.seeds {
				faults := rates.Draw(seed, t.Key())
				for _, a := range p.agents {
					ep := Episode{Task: t, Seed: seed, Faults: faults, TraceID: traceID(runID, a.Name(), t.ID, seed), KeepTrace: keepTrace, Store: store}
					if !yield(job{index: i, agent: a, ep: ep}) {
						return
					}
					i++
				}
			}
		}
	}
}

func traceID(runID, agent, task string, seed int) string {
	id := agent + "/" + task + "/" + strconv.Itoa(seed)
	if runID != "" {
		id = runID + "/" + id
	}
	return id
}

// play runs one job: the agent plays the episode, then the harness's
// executor performs the actions committed in the episode's store and the
// harness measures the episode. A governed agent without the run's store
// gets a fresh store of its own, which the harness closes.
func play(ctx context.Context, j job) (*Result, error) {
	ep := j.ep
	ep.World = newWorld(ep.Task)
	var st records
	own := false
	if j.agent.Governed() {
		if ep.Store == nil {
			s := kernel.NewMemStore()
			defer s.Close()
			ep.Store, own = s, true
		}
		st = ep.Store
	} else {
		ep.Store = nil
	}
	o, err := j.agent.Run(ctx, ep)
	if err != nil {
		return nil, err
	}
	if st != nil {
		if err := execute(ctx, st, ep.TraceID, own, ep.World); err != nil {
			return nil, err
		}
	}
	f, err := measure(ctx, ep, o.Output, st, ep.World)
	if err != nil {
		return nil, err
	}
	label := o.Label
	if label == "" {
		label = f.glueLabel()
	}
	return &Result{
		TaskID: ep.Task.ID, Seed: ep.Seed, Agent: j.agent.Name(),
		Output: o.Output, Metrics: f.metrics(), label: label, trace: o.Trace,
	}, nil
}

func runSerial(ctx context.Context, jobs func(func(job) bool), emit func(*Result) error) error {
	for j := range jobs {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, err := play(ctx, j)
		if err != nil {
			return err
		}
		if err := emit(r); err != nil {
			return err
		}
	}
	return nil
}

// runParallel plays jobs on n goroutines and emits the results in job
// order.
func runParallel(ctx context.Context, n int, jobs func(func(job) bool), emit func(*Result) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	type done struct {
		index int
		r     *Result
	}
	todo := make(chan job)
	results := make(chan done, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for j := range todo {
				r, err := play(ctx, j)
				if err != nil {
					cancel(err)
					return
				}
				select {
				case results <- done{j.index, r}:
				case <-ctx.Done():
					return
				}
			}
		})
	}
	go func() {
		defer close(todo)
		for j := range jobs {
			select {
			case todo <- j:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() {
		wg.Wait()
		close(results)
	}()
	pending := map[int]*Result{}
	next := 0
	for d := range results {
		if ctx.Err() != nil {
			continue // drain until the workers stop
		}
		pending[d.index] = d.r
		for r, ok := pending[next]; ok; r, ok = pending[next] {
			delete(pending, next)
			next++
			if err := emit(r); err != nil {
				cancel(err)
				break
			}
		}
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}

// progress prints done/total, episodes per second and the ETA.
type progress struct {
	w           io.Writer
	total       int
	start, last time.Time
}

// progressEvery is how often a progress line is printed.
const progressEvery = 2 * time.Second

func (p *progress) tick(done int, now time.Time) {
	if p.w == nil || (now.Sub(p.last) < progressEvery && done < p.total) || now.Sub(p.start) < progressEvery {
		return
	}
	p.last = now
	fmt.Fprintln(p.w, progressLine(done, p.total, now.Sub(p.start)))
}

// progressLine formats one progress report.
func progressLine(done, total int, elapsed time.Duration) string {
	rate := float64(done) / elapsed.Seconds()
	eta := "?"
	if rate > 0 {
		eta = (time.Duration(float64(total-done) / rate * float64(time.Second))).Round(time.Second).String()
	}
	return fmt.Sprintf("bench: %d/%d episodes, %.0f episodes/s, ETA %s", done, total, rate, eta)
}
