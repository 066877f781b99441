package orchestrator_test

import (
	"context"
	"fmt"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/orchestrator"
)

// thermometer is a tool worker: it commits one temperature reading per
// trace.
type thermometer struct{ tool kernel.Handle }

func (w thermometer) ID() string                { return "thermometer" }
func (w thermometer) Handle() kernel.Handle     { return w.tool }
func (w thermometer) Reads() []blackboard.Slot  { return nil }
func (w thermometer) Writes() []blackboard.Slot { return []blackboard.Slot{blackboard.Percepts} }
func (w thermometer) ShouldActivate(v kernel.View) bool {
	return !v.Has(blackboard.Percepts, "temperature")
}
func (w thermometer) Step(ctx context.Context, sc *orchestrator.StepContext) (bool, error) {
	traceID := sc.TraceID()
	_, err := w.tool.Write(ctx, kernel.Entry{TraceID: traceID, Slot: blackboard.Percepts, Kind: "temperature",
		Payload: blackboard.Payload{"value": 97.5, "unit": "C"}, Confidence: new(0.9)})
	return err == nil, err
}

// watcher is a planner worker: once a reading is in view it proposes the
// belief that it is too hot; the kernel decides.
type watcher struct{ planner *kernel.Proposer }

func (w watcher) ID() string                { return "watcher" }
func (w watcher) Handle() kernel.Handle     { return w.planner }
func (w watcher) Reads() []blackboard.Slot  { return []blackboard.Slot{blackboard.Percepts} }
func (w watcher) Writes() []blackboard.Slot { return []blackboard.Slot{blackboard.Beliefs} }
func (w watcher) ShouldActivate(v kernel.View) bool {
	p, ok := v.Committed[blackboard.Percepts]["temperature"]
	return ok && !v.Has(blackboard.Beliefs, "too_hot") && p["value"].(float64) > 90
}
func (w watcher) Step(ctx context.Context, sc *orchestrator.StepContext) (bool, error) {
	traceID := sc.TraceID()
	d, err := w.planner.Submit(ctx, kernel.Entry{TraceID: traceID, Slot: blackboard.Beliefs, Kind: "too_hot",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"temperature"}}})
	if err != nil {
		return false, err
	}
	return d.Committed(), nil
}

// Registered in the "wrong" order, the workers still run writer first, so
// the watcher acts on the reading in the same round. The second round
// produces nothing and the run is quiescent.
func ExampleOrchestrator_Run() {
	k, err := kernel.New(kernel.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer k.Close()
	o, err := orchestrator.New()
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := o.Register(watcher{k.Proposer(blackboard.RolePlanner, "watcher")}, thermometer{k.Handle(blackboard.RoleTool, "thermometer")}); err != nil {
		fmt.Println(err)
		return
	}
	res, err := o.Run(context.Background(), "episode-1")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range res.Steps {
		fmt.Printf("round %d: %s produced=%v\n", s.Round, s.WorkerID, s.Produced)
	}
	fmt.Println("rounds:", res.Rounds, "end:", res.End)
	fmt.Println("belief too_hot committed:", res.View.Has(blackboard.Beliefs, "too_hot"))
	// Output:
	// round 1: thermometer produced=true
	// round 1: watcher produced=true
	// rounds: 2 end: quiescent
	// belief too_hot committed: true
}
