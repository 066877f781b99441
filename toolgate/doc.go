// Package toolgate is the tool-call gate: the runtime through which every
// tool call an agent's model makes becomes a governed kernel action. The
// gate checks the call, has the kernel decide it, runs its effect at most
// once per action from the store's point of view, and keeps a decision
// record of what it did.
//
// # What the gate does
//
// The owner registers [Tool]s (name, description and JSON Schema shown to
// models, the beliefs a call rests on, the percept kind its result is
// recorded under, the effect, an approval policy and a retry policy), the
// contracts ([Config.Contracts]: the tools each caller may use) and,
// optionally, intents ([Config.Intents]). [New] builds the kernel the gate governs and
// registers each tool's action type with it; [Gate.Kernel] returns it for
// the agent's other handles and for inspection.
//
// [Gate.Call] puts one call through three checks, in order: permission
// (the tool is registered and the caller's contract lists it), rule (the
// intent allows it, the arguments fit the schema, follow from the
// observations the tool's beliefs rest on and lie within the trace's
// request) and situation (the kernel decides the action: its beliefs
// committed and true on current evidence, rules, constraints, once-keys).
// A refusal is a [Result], not an error, with a code, the root cause and
// a hint written for the model; [Result.ForModel] renders it. A committed
// call either waits for a person ([Approver], [Gate.Pending]) or
// runs: the gate writes an attempt before the effect starts and the
// effect's result after, each under a once-key, so that concurrent
// drivers and restarts run it once. [Gate.Execute] continues an approved
// call; [Gate.Recover] finishes what a crash left.
//
// Inside, [Gate] is the integrator's handle: its methods are what an
// integrator calls. The call path and the execution of committed actions
// (attempts, retries, approvals, escalation, recovery) are the gate's
// executor, an unexported type the gate's methods call into. The records
// the gate writes are package audit's, each shape with its one encoder and
// decoder: decision records ([audit.Entry], listed by [audit.List]),
// approvals ([audit.Approval], the answer an [Approver] records) and the
// actions waiting for one ([audit.Pending], listed by [Gate.Pending]),
// effects ([audit.Effect]), the policy snapshot ([Gate.Policy], an
// [audit.Policy]), the record kinds ([audit.KindAttempt], ...) and the
// writer ids ([audit.CallerWriter], ...).
//
// # The smallest use
//
// One read-only tool, one caller, the default in-memory store:
//
//	lookup := toolgate.Tool{
//		Name:        "lookup_order",
//		Description: "Look up an order by id.",
//		Parameters:  json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"}},"required":["order_id"]}`),
//		Result:      "order",
//		ReadOnly:    true,
//		Effect: func(ctx context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
//			return blackboard.Payload{"order_id": inv.Args["order_id"], "amount": 700.0}, nil
//		},
//	}
//	g, err := toolgate.New(ctx, toolgate.Config{
//		Tools:     []toolgate.Tool{lookup},
//		Contracts: map[string][]string{"support": {"lookup_order"}},
//	})
//	if err != nil {
//		return err
//	}
//	defer g.Close()
//	res, err := g.Call(ctx, toolgate.Call{Tool: "lookup_order", Caller: "support",
//		TraceID: "ticket-7", Args: json.RawMessage(`{"order_id":"A1"}`)})
//	if err != nil {
//		return err // the loop cannot go on: a store failure, a cancelled context
//	}
//	reply := res.ForModel() // what to hand back to the model as the tool's result
//
// A tool that changes the world rests on beliefs ([Tool.Requires]),
// declares how its arguments follow from the observations ([Binding]) and
// what request it acts within ([Tool.Scope]), and may need approval
// ([Tool.Approval]); the package example (Example) builds such a refund
// tool, with its approval, end to end. [Func] defines a tool from Go
// types.
//
// # Errors
//
// An error, as opposed to a refusal, wraps a sentinel for errors.Is: the
// gate's own [ErrDecided], or one of the shared vocabulary's, which the
// kernel returns for the same conditions:
//
//   - [blackboard.ErrInvalidInput]: a configuration [New] refuses (each
//     problem a [*kernel.ConfigError] naming the field, see
//     [Config.Validate]), a call the gate cannot even record (no valid
//     trace id), a bad request for [Gate.RecordRequest], run controls
//     naming a tool the gate does not hold, or a [Gate.Surface] for a
//     caller with no contract or an intent that is not configured;
//   - [kernel.ErrInvalidReference]: [Gate.Execute] or [Gate.Resume] was
//     given an id that is not a committed action the gate proposed for
//     one of its tools (in that trace), or an [Approver] one that is not
//     a committed, active action of the trace;
//   - [blackboard.ErrPermission]: a [Gate.Restrict] that would loosen the
//     trace's run controls, or an approver deciding what it may not;
//   - [blackboard.ErrDuplicateKey]: a [Gate.RecordRequest] for a trace
//     whose request is recorded already and is another one (the once-key
//     a trace's request claims is taken);
//
// or a store's, or the context's. Each message starts "toolgate: " (a
// configuration problem's "config: ") and says what happened. A refusal
// is never an error: it is a [Result].
//
// # Where the details are
//
// docs/effects.md is the reference for the gate, one section each: tools
// from Go types, derived beliefs, the three checks, retries of one call
// ([Call.RetryKey]), run controls ([Gate.Restrict]), the request
// ([Gate.RecordRequest]), the policy snapshot, budgets and loop guards,
// typed failures, approvals, the lifecycle as a chain of records, exactly
// once and what that does not mean, masked fields (their keys are package
// mask's), caller-driven tools,
// recovery, decision records ([audit.List]), telemetry and
// concurrency. It also says what the gate guarantees and what it does
// not, with the reasons. docs/runtime.md covers budgets, loop guards and
// typed failures in the agent's run; docs/observability.md the spans and
// metrics; docs/security.md the attacks the tests play.
//
// # Concurrency
//
// A [Gate] is immutable after [New] and safe for concurrent use by any
// number of goroutines; several processes may run gates over one store,
// whose once-keys order concurrent drivers of one action. The gate starts
// no goroutines; an effect runs on the calling goroutine.
package toolgate
