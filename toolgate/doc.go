// Package toolgate is the tool-call gate: it turns every tool call an
// agent's model makes into a governed kernel action, checks it, runs it at
// most once per action from the store's point of view, and keeps a
// decision record of what it did.
//
// The owner registers [Tool]s (name, description and JSON Schema shown to
// models, the beliefs a call rests on, the percept kind its result is
// recorded under, the effect function (or none, for a tool its caller
// runs: "Caller-driven tools" below), an approval policy and a retry
// policy), the contracts ([Contract]: the tools each worker is authorized
// to use) and, optionally, intents ([Intent]: the tools each kind of
// request may use):
//
//	g, err := toolgate.New(ctx, toolgate.WithKernel(kernel.WithStore(store)),
//		toolgate.WithTools(lookupOrder, issueRefund),
//		toolgate.WithContracts(toolgate.Contract{Name: "support", Tools: []string{"lookup_order", "issue_refund"}}))
//	k := g.Kernel() // for the agent's other handles and inspection
//
// Tools are registered once: [New] builds the kernel from the options
// given to [WithKernel] and registers each tool's action type with it
// (one that rests on no belief as a safe, repeatable action, any other's as
// requiring the tool's beliefs, with the tool's once-key, [Tool.Once];
// [OnceBy] names its argument fields), and the kind of each belief a
// tool derives ([Tool.Derives]). Nothing but the contracts and intents
// names a tool again.
//
// # Tools from Go types
//
// [Func] defines a tool from its argument and result types: the JSON
// Schema models are shown is generated from the argument struct (json
// names, required unless omitempty, descriptions from `jsonschema:"..."`
// tags) and the effect gets the committed arguments decoded and returns a
// typed result, which becomes the result's payload. Every schema, given
// or generated, is resolved at [New] and enforced on every call by
// github.com/google/jsonschema-go: bounds, patterns, nested objects,
// arrays, $defs, rules across properties. A call that does not fit is
// INVALID_ARGUMENTS, naming the argument at fault.
//
// # Derived beliefs
//
// A tool's result can ground a belief without agent code: a [Derive] on
// the tool is a CEL rule over the result (and the arguments) for the
// belief's value, and CEL expressions for its fields. After recording a
// successful result, the gate proposes the belief as a planner of its own
// ([DeriverWriter]), resting on that very result record (depends_on its
// id), and the kernel decides it like any belief: a result superseded by
// a newer one of its kind, stale, conflicting or low-confidence evidence,
// belief rules. An action that requires the belief is refused once its
// result is no longer the current observation of its kind
// (SUPERSEDED_EVIDENCE). The call's [Result.Derived] says what became of
// each. The gate reserves each derived kind to its tool's deriver, and
// each tool's action type to the callers whose contracts list it
// (kernel.WithReserved): no planner proposes either (PERMISSION_DENIED),
// so no planner overrides a derived belief, and only the gate's own
// actions hold a tool's once-key. A result
// the rule cannot evaluate proposes nothing (DERIVATION_FAILED, with a
// decision record): derivation fails closed. A belief is derived on the
// call that records the result; a crash between the two leaves the
// result without its belief, and the model calls the tool again.
//
// # Three checks, in order
//
// [Gate.Call] enforces the triple check of the Cognitive Core spec:
//
//  1. Permission: the tool is registered (TOOL_UNKNOWN; a tool name is 1
//     to 64 of A-Z, a-z, 0-9, _, . and -, and any other is recorded only
//     escaped) and the caller's contract lists it
//     (TOOL_NOT_PERMITTED).
//  2. Rule: when intents are configured, the call names an intent that
//     lists the tool (TOOL_NOT_FOR_INTENT). The arguments fit the tool's
//     schema (INVALID_ARGUMENTS, naming the field), and follow from the
//     observations the tool's beliefs rest on as its [Binding]s say
//     (ARGUMENT_NOT_BOUND, naming the argument and the percept): a belief
//     about one order grounds no refund of another. A tool that rests on
//     beliefs declares Bindings, or Unbound when its arguments follow from
//     no observation; [New] refuses one that declares neither. The
//     arguments lie within the request the trace serves as the tool's
//     [Tool.Scope] says, and the call is made for the request's principal
//     (OUT_OF_SCOPE; see "The request" below).
//  3. Situation: the call becomes an action proposal of the caller's
//     planner ([CallerWriter]), its payload the arguments with the tool's
//     beliefs as requires_beliefs, and the kernel decides it: the beliefs
//     committed and true, their evidence current (STALE_EVIDENCE, ...),
//     rules, constraints, once-keys (DUPLICATE_ACTION). A kernel refusal
//     keeps the kernel's code.
//
// A refusal is not an error: the [Result] carries the code, the root cause
// and a short repair hint written for the model ("The order information is
// out of date. Call lookup_order again to refresh it, then retry."), for
// the agent loop to hand back as the tool's result. A tool can word its
// own hints ([Tool.Hints]). [Result.ForModel] is the one rendering of a
// Result for the model, as text and structured content with an error flag
// (what an OpenAI-compatible tool message and an MCP tool result hold): the
// code, the root cause, a failure's status and category, the hint, the
// output of an executed call. An effect's error text (a panic's message,
// a stack trace, an internal error) never reaches the model, neither there
// nor in a hint, nor the store: a record keeps the error's kind (its
// type), the kernel's logger ([kernel.WithLogger]) gets the text, and an
// effect that marks an error [Recordable] has its text recorded, with the
// call's masked values replaced by their masks.
//
// # Retries of one call
//
// A framework may deliver one call twice (a retried request, a resumed
// run). A call with a [Call.RetryKey] is idempotent in its trace: the
// first call the kernel decides claims the key (a once-key derived from
// the trace and the key, in the kernel's namespace) in the same write as
// its decision, and a later call under the key, from any process, gets
// what the first came to without a new action or a new charge to the
// budget: the recorded refusal, the recorded result, APPROVAL_REQUIRED
// while it waits (once approved, the retry runs it, exactly once), or
// CALL_RUNNING (outcome committed) while another driver runs its effect.
// The key is bound to the tool, the caller and the arguments' digest:
// another call under it is RETRY_KEY_CONFLICT and learns nothing of the
// first. A call the gate refused before the kernel decided it (contract,
// intent, schema, bindings, budget) claims no key: nothing ran, and a
// retry is decided anew.
//
// [Gate.Surface] lists the tools a model may be shown for a caller, trace
// and intent: in the contract, allowed by the intent, allowed by the
// trace's run controls, and possible
// now (the beliefs they require are committed and true). A capability that
// would be refused is absent from the model's tool list. Surfacing is a
// courtesy, not the enforcement: Call checks every call again.
//
// # Run controls
//
// The owner restricts a trace with [Gate.Restrict]: a safety mode
// ([SafetyReadOnly]: only tools that declare [Tool.ReadOnly] run)
// and prohibited tools. They are recorded through the kernel's Governor,
// each control a once-key of the trace, so no handle can set or lift one,
// and they only tighten ([ErrLoosened]); [Gate.Controls] reads them by
// key, at a cost flat in the trace's length. A call they forbid is
// READ_ONLY_MODE or TOOL_PROHIBITED: an effectful tool's before the
// kernel (once the permission and intent checks pass), and every tool's
// action again as the kernel decides it, against the trace's latest
// controls record in the state it decides on (a read-only tool's call
// gets only this check, which costs no read). An action not yet started
// is refused for good when Execute, Resume or Recover would start it: an
// approval given before the trace became read-only never runs.
//
// # The request
//
// Bindings tie a refund to the order looked up; they do not say it is the
// order the customer asked about. The application says that: it records
// what a trace serves with [Gate.RecordRequest], once, from what it trusts
// (the ticket, the authenticated session): the [Request]'s principal, who
// the agent acts for, and its resources, the identifiers they asked about
// by type. It is written through the kernel's Governor with the kernel's
// role and claims the trace's request once-key, so no handle can write or
// replace it. A tool declares which arguments must lie within it
// ([Tool.Scope]: {"order_id": "order"}; [ScopePrincipal] for the principal
// itself) or says [Tool.Unscoped]; [New] refuses an effectful tool (not
// [Tool.ReadOnly]) that declares neither. A call outside the request, or
// of a scoped tool in a trace with no request, is OUT_OF_SCOPE before the
// kernel, and the kernel checks every action of a scoped tool again as it
// decides it; a call whose [Call.Principal] (an adapter's authenticated
// user) is not the request's is OUT_OF_SCOPE whatever the tool. The
// decision record of such a call names the request record ("request") and
// its principal ("principal").
//
// # Policy snapshot and the context a call names
//
// [New] records the gate's governance as data ([Policy]: tools,
// contracts, intents, fallback, the kernel's rules as [rules.Spec] and the
// names of validators that are code) once per hash per namespace, and
// fails if it cannot; every decision record carries the hash under
// "policy". A [Call.Context] names the compiled context the model was
// shown; the gate records it under "context" only when it is a
// [KindCompiledContext] record of the call's trace written by the kernel,
// else the call is CONTEXT_INVALID.
//
// # Budgets and loop guards
//
// A call is charged to every budget that applies: its own ([Call.Budget],
// which a sub-agent lane fills with its sub-run and its guard) and the
// gate's ([WithBudget]). Budgets compose: each limit is checked, the
// strictest refuses, and none replaces another (a sub-run of the gate's
// run counts on it once). Before anything else, the gate asks the loop
// guards (the same tool with the same canonical arguments, a third time,
// is LOOP_DETECTED) and then the runs' tool-call budgets (BUDGET_EXCEEDED,
// naming the budget: tool calls, tool calls per turn, cost, deadline).
// The guard goes first, so a looping call spends no tool call. Every call
// the gate receives is counted, refused or not: each is a step of the
// model's loop. A refused call runs nothing and stores only its decision
// record, with the structured reason and a snapshot of the budget; the
// Result's hint is the reason's, so the model is told why. Every decision
// record of an admitted call carries the snapshot taken when it was
// counted.
//
// # Typed failures
//
// [Result.Failure] types a refused or failed call as a failure.Failure,
// for a worker's lease and the repair router, from one table of codes:
// mistakes in the call itself and preconditions the worker can establish
// are skill failures (the worker goes on), missing authority and spent
// budgets are state and infrastructure failures (the lease ends). An
// effect's error that carries a type (a failure.Failure, an error with an
// HTTP status, a network error) is recorded with its execution status
// and comes back exactly. [Tool.Expect] catches partial success: an output
// with mixed per-resource results, no data where data was expected, or
// missing fields is recorded as a failure (EFFECT_INCOMPLETE) with its
// status, never as the tool's result.
//
// # Approvals
//
// A tool's [ApprovalPolicy] (always, or a CEL rule over the arguments such
// as "amount > 500", failing closed) makes a call that the kernel commits
// wait: [audit.OutcomePendingApproval], with the action id to approve and the
// committed arguments and their digest ([Result.Args], [Result.ArgsDigest]). A person approves or
// denies it with an [Approver] ([Gate.Approver], for an identity the owner
// verified), with an [Answer]: the action id, the digest of its arguments
// ([ArgsDigest]; [Gate.Pending] lists both, with the latest answer on
// each), the [audit.Verdict], a note and a TTL. The approval
// ([audit.Approval], appended through the kernel's Governor with the
// approver's role) binds the action, the digest, the approver's identity
// and an expiry; the proposer's own writer cannot approve ([CallerWriter]).
// [Approver.Decide] records an answer; [Approver.Resolve] is the
// one call an adapter makes when a person answers: it records the decision
// for the digest the person was shown and carries it out at once
// (Execute), and a retry returns what came of it.
//
// An action takes one decision at a time, whoever gives it (two consoles,
// bk approve and a console, two processes over one store): the decision's
// write claims a once-key of (the action, the decision it supersedes) in
// its own batch, so of decisions made at once exactly one is written and
// the others fail with [ErrDecided] (a *decidedError naming the one
// written, settledConcurrent). A decision is final but for one case: an
// approval that expired before any attempt used it may be superseded by a
// new decision, which names it in its input refs and also claims its use
// (the key the first attempt claims to consume it), so that the expired
// approval is never used once superseded. No decision is taken after a
// denial, an approval in force or used, or once the action has an attempt
// or a result (an escalation to the safe fallback among them); each is a
// *decidedError that says which (settled), and nothing is written.
// [Gate.Execute] (or [Gate.Resume], with the arguments about to run) then
// runs it: the latest decision must exist (else APPROVAL_REQUIRED), be an
// approval (else APPROVAL_DENIED) and not have expired (APPROVAL_EXPIRED),
// it must bind the action's digest and not be by its proposer (else
// APPROVAL_MISMATCH: Approve refuses both, so only a forged record fails
// here), and the arguments about to run must have the approved digest
// (APPROVAL_MISMATCH: a changed argument needs a new call and a new
// approval). The first attempt consumes the approval: its write claims a
// once-key for the approval record, so an approval is used once. A denied
// or expired approval records the escalation and commits the safe
// fallback (queue_for_review, with the code as reason) instead.
//
// An action that will never run (denied, expired, or refused for good
// before any attempt) is retired ([kernel.Kernel.Retire], fenced by its
// first attempt's key), so that its once-key no longer blocks the next
// legitimate action on the same key; an action whose attempt started keeps
// its key. A call refused with DUPLICATE_ACTION gets a hint that says what
// became of the action holding the key: taken only when it executed,
// otherwise waiting for approval, running, failed or refused.
//
// # The lifecycle is a chain of records
//
// Records are append-only; a call's life is a chain of them in its trace,
// each naming the one before in its input refs:
//
//	refused before the kernel                      decision record: refused (nothing else)
//	proposal (actions), refused by the kernel      + decision record: refused
//	proposal, then committed action (actions)      + decision record: committed | pending_approval
//	approval or denial (evidence, kind approval)   written for the approver ([Approver])
//	attempt 1..n (percepts, kind effect_attempt)   before each start of the effect
//	result (percepts, the tool's result kind)      + decision record: executed
//	  then each derived belief (beliefs)           + decision record: committed | refused
//	  or failure (percepts, kind effect_failed)    + decision record: failed
//	  or escalation (percepts, effect_escalated)   + decision record: escalated,
//	     then the fallback action (queue_for_review) + its decision record: committed
//
// A successful result's payload is the effect's output at the top level,
// so that beliefs, rules and constraints read it like any percept (a
// lookup_order result is an "order" percept a refund_due belief can rest
// on, and [Tool.ResultTTL] makes it go stale); the gate's own fields are
// an [Effect] under [KeyEffect], which [EffectOf] reads back. A failure is
// recorded under its own kind, so it never replaces the last good
// observation.
//
// # Exactly once, and what that does not mean
//
// Each allowed (and approved) action has an idempotency key: the kernel's
// once-key for the action when its spec has one ([kernel.Kernel.OnceKeyOf]),
// else the namespace and the action id. Before the effect function is
// called, the executor persists an attempt percept whose write claims the
// once-key of that attempt number (persist before act), so no two drivers
// ever start the same attempt; it passes the key to the effect
// ([Invocation.Key]); and it records the result in a write that claims the
// key's result once-key, with the decision record in the same batch. An
// effect whose key has a recorded result is never started again: Execute,
// Resume and Recover return the recorded result instead. A driver that
// finds an attempt held by another waits for its result, or for its lease
// to run out ([WithLease]) and then starts the next attempt.
//
// An attempt has one deadline: the lease_until_ms its record holds, as the
// store recorded it. The effect's context ends a margin (a tenth of the
// lease, at most 5 s) before it, counted on the kernel's clock once the
// attempt is written, and no other driver starts the next attempt until a
// margin after it; an attempt whose write left less than the margin does
// not start its effect. So a slow write never lets two effects of one
// action hold live contexts at once.
//
// Retries are bounded by the tool's [RetryPolicy]: an error marked with
// [Retryable] is retried after a backoff with jitter (a cancelled context
// ends the wait), with the same key and the next attempt number; any
// other error fails the call at once (EFFECT_FAILED); the last retryable
// failure is EFFECT_RETRIES_EXHAUSTED. A panic is EFFECT_UNKNOWN (the
// effect may have acted before it panicked): nothing starts it again, the
// action keeps its once-key, a person settles it, and the kernel's logger
// gets the panic's value and stack at error level. An attempt left
// without a result counts against the budget.
//
// This is exactly once from the store's point of view, not in the world.
// A crash after the effect did its work and before its result was recorded
// leaves an attempt without a result. For a tool whose key the world
// honours (it has a once-key, [Tool.Once], or declares [Tool.Idempotent]),
// [Gate.Recover] (or a later Execute) calls the effect
// again, with the same key and a higher attempt number: the external
// system must honour the key (a payment API's idempotency key) for the
// world to see the effect once. Any other effect (an email) is started at
// most once per call: an attempt that began and left no result this driver
// saw fail, or that failed after its lease ran out, is recorded as
// EFFECT_UNKNOWN (typed FAILED_UNKNOWN, not retryable) and never started
// again; a person checks whether it took effect. A retryable error the
// effect returns itself still retries it. A call cancelled while its
// effect runs leaves the same state as a crash. The effect's context is cancelled a
// margin before its lease runs out; an effect that ignores it may still be
// running when another driver starts the next attempt. Errors returned by an effect are
// shown to the model in the result; keep secrets out of them.
//
// # Masked fields
//
// A tool names its sensitive top-level argument and output fields in
// [Tool.Masked]; the gate then needs a key: one for every trace
// ([WithMaskKey]), or each trace's own from a [Keyring] ([WithMaskKeys]);
// New refuses without one. Once the arguments pass the schema, and before anything is
// written, the gate replaces each masked value with its keyed hash
// ([MaskPrefix]: HMAC-SHA256 of the value's canonical JSON): the committed
// action, every decision record and the result percept hold the hash, and
// so does whatever reads the store (the inspector, exports, derived
// beliefs). A call refused before its arguments parse keeps no raw
// arguments when its tool masks a field. Equal values give equal hashes,
// so the approval digest, once-keys and retry keys bind to the real values;
// an Equal [Binding] compares the hash with the percept's field, which
// must be masked under the same key (a tool's masked output, or
// [Gate.Mask] for an observer), and a masked argument against a plain
// field is refused.
//
// The real values live only in memory, for the call: the effect gets them
// ([Invocation.Args]), and the caller gets the real output and, for a call
// that waits for approval, the real arguments ([Result.Args]), which
// [Gate.Resume] must be given back (masked, they must match the approved
// digest). A later driver has only the hashes, and never runs an effect
// with one: Execute without the arguments, or Recover, refuses an action
// not yet started (MASKED_UNAVAILABLE, recording nothing; Resume with the
// arguments still runs it), and an attempt a crash left is EFFECT_UNKNOWN, for a person,
// even for an idempotent tool. A call repeated under its retry key
// carries the real values again: an action it finds not yet run runs
// with them; one with a result gets the recorded, masked output.
//
// Erasing masked values is destroying their key: no record changes, and
// the hashes then match nothing anyone can compute. Under [WithMaskKey]
// that erases every trace at once; under [WithMaskKeys], [Keys.Erase]
// erases one trace of one namespace, whose later calls fail with
// [ErrMaskErased] and write nothing, while other traces keep binding. A
// keyring's key is the trace's in the gate's kernel's namespace: gates of
// different namespaces sharing a keyring (one key directory) have
// different keys for the same trace id, and erase them apart. A key per trace means a value
// hashes differently in each trace, so New refuses a once-key over a
// masked field under a keyring, and an observer masks a percept field for
// its trace ([Gate.Mask]). See docs/security.md, "Masked fields", for
// what this does and does not protect.
//
// # Caller-driven tools
//
// Some tools are run by their caller, not the gate: an agent framework
// (ADK, Eino) runs its own tools, and an adapter that governs them puts
// each call to the gate with the framework's run of the tool as the
// call's effect ([Call.Effect]), an [EffectFunc] like any other (its
// context carries the [Invocation], [InvocationFrom], for a tool that
// reads only its context). A call's effect runs in place of the tool's
// [Tool.Effect]. A tool registered with no Effect is caller-driven
// ([Gate.CallerDriven]): the gate governs it as any other (contracts,
// evidence, bindings, approvals, once-keys, retry keys, the record of
// each attempt and result), and nothing ever runs it but the effect a
// call brings.
//
// Nothing is used up for lack of that effect. A call of a caller-driven
// tool that brings none is refused with EFFECT_UNAVAILABLE before its
// budget is charged, with nothing recorded. [Gate.Execute],
// [Gate.Resume] and [Approver.Resolve] (after recording the person's
// decision) never have a call's effect: on a caller-driven action not yet
// started they answer EFFECT_UNAVAILABLE, run nothing and record nothing,
// so its approval, its once-key and its retry key stay for the caller,
// whose next call under the same [Call.RetryKey], with the effect, runs
// it (rechecking its evidence, and using the approval, then). That is how
// an adapter resumes after an approval: record the decision (Resolve, or
// [Approver.Decide]), then call again under the framework's call id. A
// denial or an expired approval needs no effect: it escalates as for any
// tool.
//
// [Gate.Recover] never starts a caller-driven tool. An attempt a crashed
// caller left of a tool whose effect may be re-driven (a once-key, or
// [Tool.Idempotent]) is re-driven by the caller's retry under the same
// retry key, with the same idempotency key and the next attempt number;
// Recover leaves it, and an action not yet started, as it is, recording
// nothing and returning nothing for it. An attempt of any other
// caller-driven tool is EFFECT_UNKNOWN once its lease is over, as for any
// tool: nothing may start it again.
//
// # Recovery
//
// [Gate.Recover] finishes what a crash left: attempts whose lease is over
// and that have no result are re-driven with the same key; committed
// actions no attempt was started for are executed once they are older
// than the lease, after the kernel decided their evidence again
// ([kernel.Kernel.RecheckAction]); approved, denied and expired approvals
// are applied; an
// escalation whose safe fallback was never submitted gets it. It is safe
// to run in several processes at once, next to live calls.
//
// # Decision records
//
// Every call leaves a versioned [audit.Entry]: a refusal before the
// kernel on its own ([audit.Append]); the kernel's decision as a follow
// record in the batch of the commit; the effect's result, an escalation,
// in the batch of the record they describe. Each carries the call (tool,
// call id, caller, intent, arguments and their digest), the evidence refs,
// the constraints in force, the approvals, the outcome and the code.
// [Gate.Decisions] queries them by trace, tool and outcome ([audit.List]).
// The gate writes them, and claims its once-keys, through the kernel's
// [kernel.Governor], which it never hands out: no tool, planner or
// approver can write a decision record or claim a key.
//
// # Telemetry
//
// With [WithTracerProvider] (the global provider by default) a call runs in
// its own "execute_tool {tool}" span with the OpenTelemetry GenAI
// attributes (gen_ai.operation.name, gen_ai.tool.name,
// gen_ai.tool.call.id), a child of whatever span the context carries (an
// application's or a framework's); the kernel's decision spans nest under it, and
// each effect attempt and each approval has its own span. A call checked
// against a budget ([WithBudget]) carries the budget's figures
// (bk.budget.*). [WithMeterProvider] adds the metrics of calls, effect
// attempts and outcomes, approvals recorded, budget pressure, and
// approvals pending with their age (docs/observability.md).
//
// # Concurrency
//
// A [Gate] is immutable after [New] and safe for concurrent use by any
// number of goroutines; several processes may run gates over one store.
// The store's once-keys order concurrent drivers of one action: 8
// goroutines executing one approved action call its effect once. The gate
// starts no goroutines; an effect runs on the calling goroutine.
package toolgate
