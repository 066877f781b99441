package main

// The integration code: everything in this file is what the desk's owner
// writes to put a model behind the gate: the gate over the desk's tools
// and rules, the agent and the supervisor; the restart wait; the ticket
// loop; the approval screen; closing. The model is untrusted; the kernel
// and the gate decide each of its calls, and only committed (and, above
// 500, approved) refunds reach the payment API. Not integration: the
// desk's policy, its tools' definitions and rules (policy.go); the tools'
// bodies and argument types (tools.go); the simulated world, the scripted
// model, the tickets, the approver's judgement, the command line and the
// report. The README counts these lines, and TestIntegrationLines holds
// them to 60.

import (
	"context"
	"errors"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/pack"
	"github.com/blackboardkernel/bk/supervisor"
	"github.com/blackboardkernel/bk/toolgate"
	"github.com/blackboardkernel/bk/worker/llm"
)

// role is the contract the model's calls are made under; lease, an
// attempt's reservation: a restarted desk's supervisor recovers the
// attempt of a crashed process once it ran out.
const role, lease = "support", time.Second

// newDesk opens the gate over the kernel kc configures (its store,
// namespace and the key that signs its history's checkpoints), with the
// desk's tools and rules (policy.go); the agent that lets the model call
// them, showing it each round the context a compiler makes of the
// ticket's current evidence, to fit the model's window (package pack); and the supervisor that recovers
// and resumes the gate's actions, reporting to events. It returns the desk
// even with an error: the caller closes what it opened.
func newDesk(ctx context.Context, kc kernel.Config, w *world, model *llm.Client, events func(context.Context, supervisor.Event)) (*desk, error) {
	d := &desk{w: w}
	rs, err := deskRules()
	comp, cerr := pack.New(pack.WithWindow(contextWindow))
	if err = errors.Join(err, cerr); err == nil {
		d.g, err = toolgate.New(ctx, toolgate.Config{Lease: lease, Tools: d.tools(),
			Kernel:    kernel.Config{Store: kc.Store, Namespace: kc.Namespace, Signer: kc.Signer, Validators: []kernel.Validator{rs}},
			Contracts: map[string][]string{role: {"lookup_order", "issue_refund", "send_email"}}})
	}
	if err == nil {
		d.agent, err = llm.NewAgent(model, d.g, llm.WithMaxRounds(12), llm.WithCompiler(comp))
	}
	if err == nil {
		d.sup, err = supervisor.New(d.g, supervisor.Config{Events: events})
	}
	return d, err
}

// start starts the supervisor, until ctx ends or close; after a restart
// (restarted: the store holds an earlier run's records) it waits until the
// supervisor has finished what that run left, once its leases ran out.
func (d *desk) start(ctx context.Context, restarted bool) error {
	if err := d.sup.Start(ctx); err != nil || !restarted {
		return err
	}
	return d.sup.Recovered(ctx)
}

// close stops the supervisor (Close waits for its effects), then closes
// the gate; the caller closes the store it opened after.
func (d *desk) close() error { return errors.Join(d.sup.Close(), d.g.Close()) }

// serve works through the tickets, each in its own trace under its request
// (who wrote it and about which order: the ticket system says, never the
// model), each message one task of the agent. turn says what to tell the
// agent for the n-th message ("": nothing, it was handled or waits); done
// reports what the agent did with it.
func (d *desk) serve(ctx context.Context, tickets []ticket, turn func(ticket, int) (string, error), done func(llm.AgentResult, error) error) error {
	var err error
	for i := 0; err == nil && i < len(tickets); i++ {
		t := tickets[i]
		err = d.g.RecordRequest(ctx, t.ID, audit.Request{Principal: t.Customer, Resources: map[string][]string{"order": {t.Order}}})
		for n := 1; err == nil && n <= len(t.Messages); n++ {
			var user string
			if user, err = turn(t, n); err == nil && user != "" {
				err = done(d.agent.Run(ctx, llm.Task{Caller: role, TraceID: t.ID, System: systemPrompt, User: user}))
			}
		}
	}
	return err
}

// approve is the approval screen: the approver answers each refund of the
// trace that waits (answer: approved or denied, with a note, for the
// arguments shown), and the gate carries the answer out at once (Resolve):
// an approved refund runs, a denied one takes its safe fallback. Answering
// what was answered records nothing.
func (d *desk) approve(ctx context.Context, trace string, answer func(audit.Pending) audit.Approval) ([]toolgate.Result, error) {
	pending, err := d.g.Pending(ctx, trace)
	results := make([]toolgate.Result, len(pending))
	for i := 0; err == nil && i < len(pending); i++ {
		results[i], err = d.g.Approver(approver).Resolve(ctx, answer(pending[i]))
	}
	return results, err
}
