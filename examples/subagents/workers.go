package main

import (
	"context"
	"fmt"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/failure"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/orchestrator"
	"github.com/blackboardkernel/bk/worker/llm"
)

// tokenEstimate is what each model call holds on its lane's budget until
// its usage is known.
const tokenEstimate = 400

// agentWorker is one member of the crew: an orchestrator.Worker that runs an LLM
// agent under what the orchestrator grants it (its lane's budget and
// guard, its grant), and hands back a typed finding.
type agentWorker struct {
	id     string // also its contract's name
	h      kernel.Handle
	agent  *llm.Agent
	reads  []blackboard.Slot
	result string // the percept kind of its tool's result
	after  string // the percept kind it needs first, "" for none
	// user is the worker's mission, built from the findings it is given.
	user func(findings []orchestrator.Finding) string
	// assertion turns its tool's result into the assertion it reports.
	assertion func(result blackboard.Record) orchestrator.Assertion
}

// ID, Handle, Reads and Writes declare the worker to the orchestrator.
func (w *agentWorker) ID() string                { return w.id }
func (w *agentWorker) Handle() kernel.Handle     { return w.h }
func (w *agentWorker) Reads() []blackboard.Slot  { return w.reads }
func (w *agentWorker) Writes() []blackboard.Slot { return []blackboard.Slot{blackboard.Percepts} }

// ShouldActivate: once what it needs is there, until its own result is.
func (w *agentWorker) ShouldActivate(v kernel.View) bool {
	return (w.after == "" || v.Has(blackboard.Percepts, w.after)) && !v.Has(blackboard.Percepts, w.result)
}

// Step runs the agent once. A failure that ended its grant is the step's
// error; a failure on its last turn (the grant spent) is reported in its
// finding; otherwise the finding asserts what its tool returned, resting
// on the result's record.
func (w *agentWorker) Step(ctx context.Context, sc *orchestrator.StepContext) (bool, error) {
	traceID := sc.TraceID()
	user := w.user(sc.Findings())
	if rep, repairing := sc.Repair(); repairing {
		// The repair goes at the top, where the model reads it first.
		user = fmt.Sprintf("REPAIR %s: %s\n%s", rep.Failure.Status(), rep.Failure.Message(), user)
	}
	res, err := w.agent.Run(ctx, llm.Task{
		Caller: w.id, TraceID: traceID, System: "You are the " + w.id + " of a data team.", User: user,
		Budget: sc.Budget(), Guard: sc.Guard(), Grant: sc.Grant(), TokenEstimate: tokenEstimate,
	})
	if err != nil {
		return len(res.Calls) > 0, err
	}
	if n := len(res.Calls); n > 0 {
		if f, failed := res.Calls[n-1].Result.Failure(); failed {
			sc.Report(orchestrator.Finding{Failures: []failure.Failure{f}})
			return true, nil
		}
	}
	rec, err := w.h.Find(ctx, traceID, blackboard.Percepts, w.result)
	if err != nil {
		return len(res.Calls) > 0, fmt.Errorf("%s: its result: %w", w.id, err)
	}
	sc.Report(orchestrator.Finding{Assertions: []orchestrator.Assertion{w.assertion(rec)}})
	return true, nil
}

// latest returns the value of the latest accepted assertion of kind.
func latest(findings []orchestrator.Finding, kind string) string {
	for i := len(findings) - 1; i >= 0; i-- {
		for _, c := range findings[i].Assertions {
			if c.Kind == kind {
				return fmt.Sprint(c.Value)
			}
		}
	}
	return ""
}

// crew builds the researcher, the coder and the executor on one agent.
func crew(k *kernel.Kernel, agent *llm.Agent) []*agentWorker {
	evidence := func(kind string, value func(blackboard.Record) any) func(blackboard.Record) orchestrator.Assertion {
		return func(rec blackboard.Record) orchestrator.Assertion {
			return orchestrator.Assertion{Kind: kind, Value: value(rec), Evidence: []string{rec.ID}, Confidence: 0.9}
		}
	}
	return []*agentWorker{
		{id: "researcher", h: k.Handle(blackboard.RoleTool, "researcher"), agent: agent, result: "docs",
			user:      func([]orchestrator.Finding) string { return "Find the endpoint that lists the clinic's patients." },
			assertion: evidence("endpoint", func(r blackboard.Record) any { return r.Payload["endpoint"] })},
		{id: "coder", h: k.Handle(blackboard.RoleTool, "coder"), agent: agent, reads: []blackboard.Slot{blackboard.Percepts}, result: "build", after: "docs",
			user: func(f []orchestrator.Finding) string {
				return "Write the job that fetches the patients. endpoint=" + latest(f, "endpoint")
			},
			assertion: evidence("program", func(r blackboard.Record) any { return r.Payload["program"] })},
		{id: "executor", h: k.Handle(blackboard.RoleTool, "executor"), agent: agent, reads: []blackboard.Slot{blackboard.Percepts}, result: "patients", after: "build",
			user: func(f []orchestrator.Finding) string {
				return "Run the job. program=" + latest(f, "program") + " endpoint=" + latest(f, "endpoint")
			},
			assertion: evidence("patients", func(r blackboard.Record) any { return r.Payload["patients"] })},
	}
}
