package study

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/blackboardkernel/bk/bench/perturb"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
)

// Config is one run of the study. The zero value is not usable: start from
// [DefaultConfig].
type Config struct {
	// Seeds is the number of seeds per task: FirstSeed … FirstSeed+Seeds-1.
	Seeds int
	// FirstSeed is the first seed (0 in the paper's run).
	FirstSeed int
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
	Store store.Store
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
	// Steps numbers the report's trace lines t0, t1, … as the paper prints
	// its representative traces; without it they are not numbered.
	Steps bool
	// Progress, if set, receives a progress line about every two seconds.
	Progress io.Writer
	// Scoring is how episodes are scored: [ScoringGroundTruth] (the
	// default, also for "") or [ScoringPaper].
	Scoring Scoring
}

// Scoring says what an episode's faults are read from when it is scored.
type Scoring string

// The scorings.
const (
	// ScoringGroundTruth reads an episode's taint from the faults the
	// perturbation injected, the same for every agent.
	ScoringGroundTruth Scoring = "ground_truth"
	// ScoringPaper reads it, as the paper's artifact did, from the charge
	// the agent itself held: a dropped lookup that an agent replaced with
	// a substitute it labelled fresh (string_glue) counts as clean data.
	// Traceability and failure transparency stay measured (the paper
	// assigned them as constants per architecture).
	ScoringPaper Scoring = "paper"
)

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
	// shouldNotAct and hidden are what the harness measured beyond the
	// metrics (see [facts]), for the attack table.
	shouldNotAct bool
	hidden       int
	// views holds Output's view when the harness filled it in; the run
	// reuses it once the line is written.
	views *viewMaps
	// world and output are the episode's [World] and, for a kernel agent,
	// its Output: allocated with the result rather than apart from it.
	world  World
	output KernelOutput
}

// plan is a validated configuration.
type plan struct {
	tasks []Task
	// keys[i] is tasks[i]'s perturbation key, payloads[i] its payloads for
	// the kernel agents.
	keys     []string
	payloads []*routePayloads
	agents   []Agent
	// seeds are firstSeed … firstSeed+seeds-1.
	firstSeed, seeds int
	inFlight         int
	// paper: score as the paper did ([ScoringPaper]).
	paper bool
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
	if c.FirstSeed < 0 || c.FirstSeed > math.MaxInt-c.Seeds {
		return nil, fmt.Errorf("%w: first seed %d must be in [0, %d]", ErrInvalidConfig, c.FirstSeed, math.MaxInt-c.Seeds)
	}
	if c.Parallel < 1 {
		return nil, fmt.Errorf("%w: parallel %d must be at least 1", ErrInvalidConfig, c.Parallel)
	}
	switch c.Scoring {
	case "", ScoringGroundTruth, ScoringPaper:
	default:
		return nil, fmt.Errorf("%w: scoring %q must be %s or %s", ErrInvalidConfig, c.Scoring, ScoringGroundTruth, ScoringPaper)
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
	p := &plan{tasks: tasks, agents: agents, firstSeed: c.FirstSeed, seeds: c.Seeds, inFlight: c.Parallel, paper: c.Scoring == ScoringPaper}
	for i := range tasks {
		p.keys = append(p.keys, tasks[i].Key())
		p.payloads = append(p.payloads, newRoutePayloads(&tasks[i]))
	}
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

// worldChooser is an agent that chooses the world of its episodes: the
// faults the payment tool suffers, which the harness then injects and
// measures the episode against as for any agent.
type worldChooser interface {
	world(t *Task, seed int) (faults perturb.Flags, late bool)
}

// job is one episode to play.
type job struct {
	agent Agent
	ep    Episode
	// paper: score it as the paper did ([ScoringPaper]); the agent never
	// sees it.
	paper bool
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
// unsupported belief follow docs/reproduction.md §4 on those facts (a second
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
// error stops the run and is returned, as is the context's error. A nil out
// skips encoding the lines altogether.
func Run(ctx context.Context, cfg Config, out io.Writer) (*Summary, error) {
	p, err := cfg.plan()
	if err != nil {
		return nil, err
	}
	sum := newSummary(p, cfg.Traces)
	sum.steps = cfg.Steps
	start := time.Now()
	var w *bufio.Writer
	if out != nil {
		w = bufio.NewWriterSize(out, 64<<10)
	}
	prog := progress{w: cfg.Progress, total: p.episodes(), start: start, last: start}
	r := runner{plan: p, cfg: &cfg, spare: make(chan *chunk, 4*p.inFlight+1), lines: out != nil}
	emit := func(c *chunk) error {
		for _, r := range c.results {
			sum.add(r)
		}
		if w != nil {
			if _, err := w.Write(c.lines); err != nil {
				return err
			}
		}
		prog.tick(sum.Episodes, time.Now())
		r.recycle(c)
		return nil
	}
	if p.inFlight == 1 {
		err = r.serial(ctx, emit)
	} else {
		err = r.parallel(ctx, emit)
	}
	if err != nil {
		return nil, err
	}
	if w != nil {
		if err := w.Flush(); err != nil {
			return nil, err
		}
	}
	sum.Elapsed = time.Since(start)
	return sum, nil
}

// episodes is how many episodes the plan plays.
func (p *plan) episodes() int { return len(p.tasks) * p.seeds * len(p.agents) }

// jobs yields every episode of the plan in output order: task, seed,
// agent.
func (p *plan) jobs(cfg *Config) func(yield func(job) bool) {
	r := runner{plan: p, cfg: cfg, spare: make(chan *chunk)}
	return func(yield func(job) bool) {
		for u := range r.units() {
			var c chunk
			r.traceIDs(&c, u, u+1)
			for j := range r.unit(u, r.cfg.Rates.Draw(r.seed(u), r.keys[u/r.seeds]), c.ids) {
				if !yield(j) {
					return
				}
			}
		}
	}
}

// traceID is "[<runID>/]<agent>/<task>/<seed>", built in one allocation.
func traceID(runID, agent, task string, seed int) string {
	var buf [128]byte
	return string(appendTraceID(buf[:0], runID, agent, task, seed))
}

// appendTraceID appends traceID's result to b.
func appendTraceID(b []byte, runID, agent, task string, seed int) []byte {
	if runID != "" {
		b = append(append(b, runID...), '/')
	}
	b = append(append(append(append(b, agent...), '/'), task...), '/')
	return strconv.AppendInt(b, int64(seed), 10)
}

// play runs one job: the agent plays the episode, then the harness's
// executor performs the actions committed in the episode's store and the
// harness measures the episode. A governed agent without the run's store
// gets a fresh store of its own, which the harness closes.
func play(ctx context.Context, j job) (*Result, error) {
	ep := j.ep
	res := new(Result)
	res.world.init(ep.Task)
	ep.World, ep.output = &res.world, &res.output
	var own *memstore.Store
	if !j.agent.Governed() {
		ep.Store = nil
	} else if ep.Store == nil {
		own = memstore.New()
		defer own.Close()
		ep.Store = own
	}
	o, err := j.agent.Run(ctx, ep)
	if err != nil {
		return nil, err
	}
	var l *ledger
	var vm *viewMaps
	if ep.Store != nil {
		if l, err = readLedger(ctx, ep.Store, own, ledgerNamespace(j.agent, ep.TraceID), ep.TraceID); err != nil {
			return nil, err
		}
		defer l.release()
		if err := execute(ctx, l, ep.TraceID, ep.World); err != nil {
			return nil, err
		}
		if out, ok := o.Output.(*KernelOutput); ok && out.View == nil {
			vm = views.Get().(*viewMaps)
			out.View = l.view(time.Now().UnixMilli(), vm)
		}
	}
	f, err := measure(ctx, ep, o.Output, l, ep.World, j.paper)
	if err != nil {
		return nil, err
	}
	label := o.Label
	if label == "" {
		label = f.glueLabel()
	}
	res.TaskID, res.Seed, res.Agent = ep.Task.ID, ep.Seed, j.agent.Name()
	res.Output, res.Metrics, res.label, res.trace = o.Output, f.metrics(), label, o.Trace
	res.shouldNotAct, res.hidden, res.views = f.tainted || f.blocked, f.hidden, vm
	return res, nil
}

// runner plays a plan in chunks: runs of consecutive (task, seed) units,
// each played, measured and encoded by one goroutine, and emitted in
// order. The bytes written do not depend on how many run at once.
type runner struct {
	*plan
	cfg *Config
	// spare holds emitted chunks whose buffers the next chunks reuse: a
	// run's JSON lines then cost no allocation beyond the first chunks'.
	spare chan *chunk
	// lines: encode the JSON lines.
	lines bool
}

// chunk is the outcome of a run of units: its results in order and their
// JSON lines.
type chunk struct {
	index   int
	results []*Result
	lines   []byte
	// faults are its units' faults, drawn from seeds and keys.
	faults []perturb.Flags
	seeds  []int
	keys   []string
	// ids are its episodes' trace ids, in job order, built in idBytes,
	// each ending at its idEnds.
	ids     []string
	idBytes []byte
	idEnds  []int
}

// chunkUnits is how many (task, seed) units a chunk holds: enough that
// handing chunks out costs nothing next to playing them, few enough that
// every worker stays busy to the end of a run. With llm_bk every unit is
// its own chunk, so that as many model calls as workers are in flight.
func (r runner) chunkUnits() int {
	if slices.ContainsFunc(r.agents, func(a Agent) bool { return a.Name() == AgentLLMBK }) {
		return 1
	}
	return 16
}

// units is how many (task, seed) units the plan has.
func (r runner) units() int { return len(r.tasks) * r.seeds }

func (r runner) chunks() int { return (r.units() + r.chunkUnits() - 1) / r.chunkUnits() }

// seed is unit u's seed.
func (r runner) seed(u int) int { return r.firstSeed + u%r.seeds }

// draw draws the faults of units lo…hi-1 into c.faults, all at once:
// [perturb.Rates.DrawMany] seeds several draws' generators side by side.
func (r runner) draw(c *chunk, lo, hi int) {
	c.seeds, c.keys = c.seeds[:0], c.keys[:0]
	for u := lo; u < hi; u++ {
		c.seeds = append(c.seeds, r.seed(u))
		c.keys = append(c.keys, r.keys[u/r.seeds])
	}
	c.faults = slices.Grow(c.faults[:0], hi-lo)[:hi-lo]
	r.cfg.Rates.DrawMany(c.faults, c.seeds, c.keys)
}

// traceIDs sets c.ids to the trace ids of units lo…hi-1's episodes, in
// job order, all in one string: a chunk's ids cost one allocation rather
// than one an episode.
func (r runner) traceIDs(c *chunk, lo, hi int) {
	c.idBytes, c.idEnds, c.ids = c.idBytes[:0], c.idEnds[:0], c.ids[:0]
	for u := lo; u < hi; u++ {
		for _, a := range r.agents {
			c.idBytes = appendTraceID(c.idBytes, r.cfg.RunID, a.Name(), r.tasks[u/r.seeds].ID, r.seed(u))
			c.idEnds = append(c.idEnds, len(c.idBytes))
		}
	}
	all, start := string(c.idBytes), 0
	for _, end := range c.idEnds {
		c.ids = append(c.ids, all[start:end])
		start = end
	}
}

// unit yields the jobs of unit u: one episode per agent of one (task,
// seed), all under the unit's faults.
func (r runner) unit(u int, faults perturb.Flags, ids []string) func(yield func(job) bool) {
	return func(yield func(job) bool) {
		t := &r.tasks[u/r.seeds]
		seed := r.seed(u)
		for i, a := range r.agents {
			ep := Episode{Task: t, Seed: seed, Faults: faults, TraceID: ids[i],
				KeepTrace: r.cfg.Traces, Store: r.cfg.Store, payloads: r.payloads[u/r.seeds]}
			if wc, ok := a.(worldChooser); ok {
				ep.Faults, ep.LateFaults = wc.world(t, seed)
			}
			if !yield(job{agent: a, ep: ep, paper: r.paper}) {
				return
			}
		}
	}
}

// recycle keeps an emitted chunk's buffers for a later chunk, and the
// maps of its views for later views: once a chunk is emitted, its lines
// are written and its results summed.
func (r runner) recycle(c *chunk) {
	for _, res := range c.results {
		if vm := res.views; vm != nil {
			vm.reset()
			views.Put(vm)
		}
	}
	clear(c.results)
	clear(c.ids)
	c.results, c.lines, c.ids = c.results[:0], c.lines[:0], c.ids[:0]
	select {
	case r.spare <- c:
	default:
	}
}

// play plays, measures and encodes chunk k.
func (r runner) play(ctx context.Context, k int) (*chunk, error) {
	var c *chunk
	select {
	case c = <-r.spare:
	default:
		c = new(chunk)
	}
	c.index = k
	n := r.chunkUnits()
	lo, hi := k*n, min((k+1)*n, r.units())
	r.draw(c, lo, hi)
	r.traceIDs(c, lo, hi)
	na := len(r.agents)
	for u := lo; u < hi; u++ {
		for j := range r.unit(u, c.faults[u-lo], c.ids[(u-lo)*na:(u-lo+1)*na]) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			res, err := play(ctx, j)
			if err != nil {
				return nil, err
			}
			if r.lines {
				if c.lines, err = appendLine(c.lines, res); err != nil {
					return nil, err
				}
			}
			c.results = append(c.results, res)
		}
	}
	return c, nil
}

func (r runner) serial(ctx context.Context, emit func(*chunk) error) error {
	for k := range r.chunks() {
		c, err := r.play(ctx, k)
		if err != nil {
			return err
		}
		if err := emit(c); err != nil {
			return err
		}
	}
	return nil
}

// parallel plays chunks on r.inFlight goroutines and emits them in order.
// Only a few chunks per worker are handed out ahead of the next one to
// emit, so a slow chunk holds back memory, not just order.
func (r runner) parallel(ctx context.Context, emit func(*chunk) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	n := r.inFlight
	ahead := make(chan struct{}, 4*n) // a token per chunk handed out and not yet emitted
	todo := make(chan int)
	done := make(chan *chunk, n)
	go func() {
		defer close(todo)
		for k := range r.chunks() {
			select {
			case ahead <- struct{}{}:
			case <-ctx.Done():
				return
			}
			select {
			case todo <- k:
			case <-ctx.Done():
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for k := range todo {
				c, err := r.play(ctx, k)
				if err != nil {
					cancel(err)
					return
				}
				select {
				case done <- c:
				case <-ctx.Done():
					return
				}
			}
		})
	}
	go func() {
		wg.Wait()
		close(done)
	}()
	pending := map[int]*chunk{}
	next := 0
	for c := range done {
		if ctx.Err() != nil {
			continue // drain until the workers stop
		}
		pending[c.index] = c
		for c, ok := pending[next]; ok; c, ok = pending[next] {
			delete(pending, next)
			next++
			if err := emit(c); err != nil {
				cancel(err)
				break
			}
			<-ahead
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
