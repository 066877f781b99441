package orchestrator_test

import (
	"context"
	"fmt"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/budget"
	"github.com/blackboardkernel/bk/failure"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/orchestrator"
)

// compiler is a worker whose first draft does not parse; given the
// failure back (the fast loop), it writes a draft that does.
type compiler struct{ tool kernel.Handle }

func (w compiler) ID() string                { return "coder" }
func (w compiler) Handle() kernel.Handle     { return w.tool }
func (w compiler) Reads() []blackboard.Slot  { return nil }
func (w compiler) Writes() []blackboard.Slot { return []blackboard.Slot{blackboard.Percepts} }
func (w compiler) ShouldActivate(v kernel.View) bool {
	return !v.Has(blackboard.Percepts, "module")
}
func (w compiler) Step(ctx context.Context, sc *orchestrator.StepContext) (bool, error) {
	traceID := sc.TraceID()
	if _, repairing := sc.Repair(); !repairing {
		return false, failure.New(failure.StatusSyntax, "line 3: unexpected indent")
	}
	_, err := w.tool.Write(ctx, kernel.Entry{TraceID: traceID, Slot: blackboard.Percepts, Kind: "module",
		Payload: blackboard.Payload{"source": "def total(xs):\n    return sum(xs)\n"}})
	return err == nil, err
}

// The repair router sends a syntax error back to the worker that made it,
// with the failure in hand; the decision and the functional state are in
// the result.
func ExampleWithRepair() {
	k, err := kernel.New(kernel.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer k.Close()
	o, err := orchestrator.New(orchestrator.WithRepair(3), orchestrator.WithKernel(k),
		orchestrator.WithBudget(budget.Limits{Rounds: 10}))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := o.Register(compiler{k.Handle(blackboard.RoleTool, "coder")}); err != nil {
		fmt.Println(err)
		return
	}
	res, err := o.Run(context.Background(), "build-1")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range res.Repairs {
		fmt.Printf("%s attempt %d: %s -> %s (%s loop), next %s\n",
			r.WorkerID, r.Attempt, r.Failure.Category(), r.Remedy.Route, r.Remedy.Loop, r.Next)
	}
	for _, s := range res.Steps {
		fmt.Printf("round %d: %s attempt %d produced=%v\n", s.Round, s.WorkerID, s.Attempt, s.Produced)
	}
	fmt.Println("ended:", res.End)
	fmt.Printf("budget pressure in round 2: %.2f\n", res.States[1].Budget)
	// Output:
	// coder attempt 1: code_syntax -> fast_loop (fast loop), next coder
	// round 1: coder attempt 1 produced=false
	// round 1: coder attempt 2 produced=true
	// ended: quiescent
	// budget pressure in round 2: 0.00
}
