// Command subagents runs a coordinator with three sub-agents (a
// researcher, a coder and an executor, each an LLM agent) against a
// scripted clinic API and a scripted model, and prints how the runtime
// governs them: the repair router's fast and slow loops, a rate-limit
// backoff, an auth escalation, a partial fetch caught as a failure, and
// the stops of a token budget, a tool-call budget and the loop guard.
// Each case prints its steps with their grant trajectories, every typed
// remedy, how the run ended and the functional state.
//
//	go run ./examples/subagents
//
// The output starts with a legend of its terms (steps, grants, remedies,
// findings, the functional state). It takes no flags; -h prints the usage
// and the legend. Exit codes: 0 done, 1 failed, 2 a wrong command line.
//
// Nothing leaves the process: the model is an http.RoundTripper that
// answers from a script, the tools are Go functions, the clock is fixed
// and waits are recorded instead of slept, so the output is the same on
// every run. Every code printed is one the kernel, the gate, the budget or
// the router returned.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/blackboardkernel/bk/budget"
	"github.com/blackboardkernel/bk/failure"
	"github.com/blackboardkernel/bk/internal/cmdline"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/orchestrator"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/toolgate"
	"github.com/blackboardkernel/bk/worker/llm"
)

func main() {
	err := cli(context.Background(), os.Args[1:], os.Stdout, os.Stderr)
	os.Exit(cmdline.Exit("subagents", err, os.Stderr, nil))
}

// cli is the program: it takes no flag or argument but -h, which prints
// the usage and the legend to stdout.
func cli(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("subagents", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: subagents\n\nRuns eight scripted cases of a coordinator and three sub-agents; no flags.\n\n%s", legend)
	}
	if err := cmdline.Parse(fs, args, 0, stdout, stderr); err != nil {
		return err
	}
	return run(ctx, stdout)
}

// legend explains the report's terms, for a reader who has not read the
// runtime's documentation: it is printed before the cases.
const legend = `How to read the cases below (each is one run of the coordinator, on a trace of its own):
  step      r1 coder#2: round 1, the coder's second attempt in it (a retry the repair router ordered)
            T1(compile) ✓: the step's grant of turns; turn 1 called the tool compile and it succeeded
            (× and a failure category: the call failed)
            → SPENT: every turn of the grant was used; → YIELD: a failure the worker cannot repair
            ended the grant early and handed the step back; …: the grant was still open
            ✗ FAILED_X: the step failed with status FAILED_X ("reported": the worker's own finding said so)
  remedy    the repair router's decision on a failure: category (status) → route [the loop that acts:
            fast = the same worker, error in hand; slow = the researcher first, then the worker;
            kernel = the coordinator itself (waits, credentials); human = a person]
  finding   a typed result a worker handed over, with the records that are its evidence
  ended     how the run ended: quiescent (a round produced nothing new), budget_exceeded,
            loop_detected, escalated, ...
  stop      what stopped the run, with the limit it met and the hint the workers were given
  review    the run was queued for a person to review
  state     the functional state at the last round (or at the stop), each in [0, 1]: pressure of the
            budget, of looping, of beliefs still without evidence, of approvals waiting, of conflicting
            observations, and the propensity to escalate; recorded, never obeyed

`

// scenario is one case: the world, the model's script and what the
// coordinator grants each lane.
type scenario struct {
	name, title string
	world       world
	script      script
	lanes       map[string]orchestrator.Lane // overrides of the default lanes
}

// The defaults every case starts from.
var (
	baseScript = script{docs: "v1", prompt: 300, completion: 100}
	// runLimits is the budget of each run; its soft threshold is low so
	// that the functional state shows pressure building.
	runLimits = budget.Limits{Tokens: 20_000, ModelCalls: 14, ToolCalls: 10, Rounds: 6, Deadline: 10 * time.Minute, Soft: 0.5}
	// research sends the researcher first on a slow-loop route.
	research = map[failure.Route]string{failure.RouteSlowLoop: "researcher"}
	lanes    = map[string]orchestrator.Lane{
		"researcher": {Worker: "researcher", Turns: 1,
			Contract: &orchestrator.FindingContract{Require: []string{"endpoint"}, MinConfidence: 0.7, Evidence: true}},
		"coder": {Worker: "coder", Turns: 1, Helpers: research,
			Contract: &orchestrator.FindingContract{Require: []string{"program"}, Evidence: true}},
		"executor": {Worker: "executor", Turns: 1, Helpers: research,
			Contract: &orchestrator.FindingContract{Require: []string{"patients"}, Evidence: true}},
	}
)

func scenarios() []scenario {
	s := func(edit func(*script)) script {
		c := baseScript
		edit(&c)
		return c
	}
	return []scenario{
		{name: "fast-loop", title: "fast loop: the coder's draft does not parse",
			script: s(func(c *script) { c.docs, c.brokenDraft = "v2-batch", true })},
		{name: "slow-loop", title: "slow loop: the documented endpoint is retired",
			script: s(func(c *script) { c.docs = "v1" })},
		{name: "backoff", title: "backoff: the API is rate limited",
			world: world{rateLimited: 1}, script: s(func(c *script) { c.docs = "v2-batch" })},
		{name: "auth", title: "escalation: the API token has expired",
			world: world{authExpired: true}, script: s(func(c *script) { c.docs = "v2-batch" })},
		{name: "partial", title: "partial fetch: one patient of three fails",
			script: s(func(c *script) { c.docs = "v2" })},
		{name: "token-budget", title: "token budget: the researcher's lane runs out",
			script: s(func(c *script) { c.docs = "v2-batch" }),
			lanes:  map[string]orchestrator.Lane{"researcher": withBudget(lanes["researcher"], budget.Limits{Tokens: 600})}},
		{name: "tool-budget", title: "tool-call budget: the executor's lane allows one call",
			script: s(func(c *script) { c.docs, c.dryRun = "v2-batch", true }),
			lanes:  map[string]orchestrator.Lane{"executor": withTurns(withBudget(lanes["executor"], budget.Limits{ToolCalls: 1}), 2)}},
		{name: "loop-guard", title: "loop guard: the researcher reads the same page again and again",
			script: s(func(c *script) { c.docs, c.dithers = "v2-batch", true }),
			lanes:  map[string]orchestrator.Lane{"researcher": withTurns(lanes["researcher"], 3)}},
	}
}

func withBudget(l orchestrator.Lane, b budget.Limits) orchestrator.Lane { l.Budget = b; return l }
func withTurns(l orchestrator.Lane, n int) orchestrator.Lane            { l.Turns = n; return l }

// epoch is the fixed time of every clock here.
var epoch = time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC)

// run prints the legend, plays every case and prints it to w.
func run(ctx context.Context, w io.Writer) error {
	if _, err := io.WriteString(w, legend); err != nil {
		return err
	}
	for i, sc := range scenarios() {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "== %d. %s (trace %s)\n", i+1, sc.title, sc.name)
		if err := play(ctx, w, sc); err != nil {
			return fmt.Errorf("%s: %w", sc.name, err)
		}
	}
	return nil
}

// play sets up one case on a fresh kernel and gate, runs the coordinator
// and prints what happened.
func play(ctx context.Context, w io.Writer, sc scenario) error {
	now := func() time.Time { return epoch }
	wld := sc.world
	tools := wld.tools()
	gate, err := toolgate.New(ctx, toolgate.Config{Kernel: kernel.Config{Clock: now}, Tools: tools, Contracts: roles})
	if err != nil {
		return err
	}
	defer gate.Close()
	k := gate.Kernel()
	client, err := llm.New("http://model.invalid", llm.WithModel("scripted"), llm.WithRetries(0),
		llm.WithHTTPClient(&http.Client{Transport: model{sc.script}}))
	if err != nil {
		return err
	}
	agent, err := llm.NewAgent(client, gate, llm.WithMaxRounds(4))
	if err != nil {
		return err
	}
	var waits []time.Duration
	opts := []orchestrator.Option{
		orchestrator.WithKernel(k), orchestrator.WithRepair(3),
		orchestrator.WithBudget(runLimits), orchestrator.WithLoopGuard(0, 0),
		orchestrator.WithWait(func(ctx context.Context, d time.Duration) error {
			waits = append(waits, d) // recorded, not slept: the example is instant
			return ctx.Err()
		}, func() float64 { return 0.5 }),
	}
	for _, id := range []string{"researcher", "coder", "executor"} {
		l := lanes[id]
		if o, ok := sc.lanes[id]; ok {
			l = o
		}
		opts = append(opts, orchestrator.WithLane(l))
	}
	o, err := orchestrator.New(opts...)
	if err != nil {
		return err
	}
	for _, wk := range crew(k, agent) {
		if err := o.Register(wk); err != nil {
			return err
		}
	}
	res, err := o.Run(ctx, sc.name)
	if err != nil {
		return err
	}
	report(w, res)
	return nil
}

// report prints a run: its steps, with the repair decisions where they
// were taken, how the run ended and the functional state.
func report(w io.Writer, res orchestrator.Summary) {
	repairs := res.Repairs
	for _, st := range res.Steps {
		line := fmt.Sprintf("  step      r%d %s#%d", st.Round, st.WorkerID, st.Attempt)
		if st.Trajectory != "" {
			line += "  " + st.Trajectory
			if st.GrantEnd == "" {
				line += " …"
			}
		}
		if st.Err != nil {
			line += "  ✗ " + stepFailure(st.Err)
		}
		fmt.Fprintln(w, line)
		for len(repairs) > 0 && repairs[0].Round == st.Round && repairs[0].WorkerID == st.WorkerID && repairs[0].Attempt == st.Attempt {
			printRepair(w, repairs[0])
			repairs = repairs[1:]
		}
	}
	for _, f := range res.Findings {
		for _, c := range f.Assertions {
			fmt.Fprintf(w, "  finding   %s: %s = %v (evidence %s)\n", f.WorkerID, c.Kind, c.Value, strings.Join(c.Evidence, ", "))
		}
	}
	fmt.Fprintf(w, "  ended     %s\n", res.End)
	if st := res.Stop; st != nil {
		switch {
		case st.Reason != nil && st.Reason.Code == reason.BudgetExceeded:
			fmt.Fprintf(w, "  stop      %s: %s of run %s, %v of %v used (%s)\n", st.Reason.Code, st.Reason.Resource, st.Reason.Run,
				st.Reason.Used, st.Reason.Limit, st.Reason.Hint)
		case st.Reason != nil:
			fmt.Fprintf(w, "  stop      %s: %s (%s)\n", st.Reason.Code, st.Reason.Loop, st.Reason.Hint)
		default: // the last repair decided the stop
			last := res.Repairs[len(res.Repairs)-1]
			fmt.Fprintf(w, "  stop      %s by %s: %s\n", last.Failure.Status(), st.WorkerID, last.Remedy.Route)
		}
		if st.ReviewID != "" {
			fmt.Fprintf(w, "  review    %s queued for a person (%s)\n", kernel.FallbackQueueForReview, st.ReviewID)
		}
	}
	// The state of the last round, or the one measured as the run stopped.
	if n := len(res.States); n > 0 {
		s, when := res.States[n-1], "r"+fmt.Sprint(res.States[n-1].Round)
		if res.Stop != nil {
			s, when = res.Stop.State, "at stop"
		}
		fmt.Fprintf(w, "  state     %s: budget %.2f loop %.2f evidence %.2f gate %.2f conflict %.2f escalation %.2f\n",
			when, s.Budget, s.Loop, s.Evidence, s.Gate, s.Conflict, s.Escalation)
	}
}

// printRepair prints one decision of the repair router.
func printRepair(w io.Writer, r orchestrator.Repair) {
	d := r.Remedy
	line := fmt.Sprintf("  remedy    %s (%s) → %s [%s loop]", r.Failure.Category(), r.Failure.Status(), d.Route, d.Loop)
	if r.Wait > 0 {
		line += fmt.Sprintf(", wait %v", r.Wait)
	}
	if r.Next != "" {
		line += ", next " + r.Next
	}
	if !d.Retry {
		_, why, _ := strings.Cut(d.Reason, "; ")
		line += " (" + why + ")"
	}
	fmt.Fprintln(w, line)
}

// stepFailure names what a failed step reported.
func stepFailure(err *orchestrator.Error) string {
	var r *budget.Refusal
	if errors.As(err, &r) {
		if r.Code == reason.BudgetExceeded {
			return string(r.Code) + " " + string(r.Resource)
		}
		return string(r.Code) + " " + string(r.Loop)
	}
	f := failure.Classify(err)
	if err.Phase == orchestrator.PhaseFinding {
		return "reported " + string(f.Status())
	}
	return string(f.Status())
}
