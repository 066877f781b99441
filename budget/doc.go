// Package budget bounds what one agent run may spend, stops it when it
// loops, and measures the pressure it is under.
//
// A model will not count its own calls reliably, so the runtime counts for
// it, and refuses before spending rather than reporting after. Three parts:
// a [Run] holds the run's budgets, a [Guard] catches loops, and the
// orchestrator turns both, with the trace, into a [State] of pressures
// each round.
//
// # Budgets
//
// [Limits] gives one run its budgets: tokens, model calls, tool calls per
// run and per turn, rounds, re-plans, an optional cost, and a deadline
// counted from the run's start. A zero field leaves that resource
// unlimited, but [New] refuses limits that bound nothing: a root run needs
// at least one limit or a deadline. [DefaultLimits] is a bounded starting
// point.
//
// Every limit is checked before the call it would pay for. [Run.Allow] (and
// a [Meter]'s [Meter.BeforeModelCall]) checks and counts in one step; a
// request that does not fit is not counted and comes back as a [*Refusal]:
// code BUDGET_EXCEEDED ([reason.BudgetExceeded]), the budget that refused, its
// limit and use, and the run that owns it. Usage known only afterwards is
// charged when it is known ([Run.ChargeTokens] with the counts the model
// API returns, [Run.ChargeCost]), always recorded, and enforced at the next
// call: once the tokens are gone the next model call is refused; once the
// cost is gone, the next model or tool call. Usage recorded beyond a token
// or cost limit ends the run: the charge itself returns the [*Refusal], and
// every later request of the run, and of the sub-runs that draw on it, is
// refused. Counters and sums saturate at their largest value rather than
// wrap, so a usage near 2^63 (a broken or hostile model server) reads as
// spent, never as room; negative usage is refused with [ErrInvalid], and a
// negative running total reported to a [Meter] (a sum that wrapped
// upstream) counts as the largest. To keep parallel workers from all
// starting calls against the same last tokens, a [Meter] holds an estimate
// for each model call it admits until the next report replaces it with the
// real usage. The deadline refuses every request once it has passed; it is
// read from the run's clock (given to [New]), so tests control time.
//
// Each budget has a soft threshold ([Limits.Soft], default 0.8). Past it,
// the budget's pressure rises from 0 to 1 at the limit, so the planner
// sees a budget running out before the hard stop ([Snapshot.Pressure],
// [State.Budget]).
//
// A refusal is returned to the planner as data: the [*Refusal] in the
// error's chain (errors.As) carries the code, the numbers, what happened
// and a hint of what is still possible, and its JSON form holds the
// fields that apply. [RefusalRecord] builds the decision record of the
// refused call, with the refusal and a [Snapshot] of the budget in its
// Context, for [audit.Append], which writes it on the blackboard through
// the kernel's Governor.
//
// Decision records carry budget data in their Context under three keys:
// "reason" (a refusal's JSON form), "budget" ([Snapshot.Payload]) and
// "functional_state" (a [State] in its JSON form; an [audit.Entry] encodes
// a struct in its Context as JSON).
//
// # Sub-runs
//
// [Run.Sub] gives a sub-agent lane an isolated budget that draws on its
// parent's. The lane holds only its own *Run: no method reaches the
// parent, so the lane cannot change the parent's limits or reset its
// counters; it can only spend, and what it spends counts on the parent in
// the same step:
//
//	resource              a sub-run's use          the parent's limit
//	tokens                counts on every ancestor  binds the sub-run
//	model_calls           counts on every ancestor  binds the sub-run
//	tool_calls            counts on every ancestor  binds the sub-run
//	cost                  counts on every ancestor  binds the sub-run
//	deadline              —                         the earliest one binds
//	tool_calls_per_turn   the sub-run's own turn    does not apply
//	rounds, replans       the sub-run's own loop    does not apply
//
// Consumables are shared because they are what the parent pays for; turns,
// rounds and re-plans describe one loop, and a lane runs its own loop. So
// a sub-run's [Run.NextTurn] starts its own turn and leaves the parent's
// per-turn count alone, and the parent's per-turn limit does not cap the
// lane. Two lanes racing for the parent's last calls share them in
// whatever order they arrive, and never exceed them.
//
// # Loop guard
//
// A [Guard] ([NewGuard]) stops two kinds of loop, each with a [*Refusal]
// (code LOOP_DETECTED, [reason.LoopDetected]) that names what repeated:
//
//   - [Guard.Call], before a tool call: the same tool with the same
//     argument digest ([Digest]) may run maxIdentical times (default 2:
//     the call and one retry); the next identical call is refused.
//   - [Guard.Round], after a round: maxIdleRounds (default 2) consecutive
//     rounds without progress (no kind committed, retracted or changed)
//     stop the loop, and the refusal lists the calls made in those rounds.
//
// # Functional state
//
// The orchestrator measures, each round, the run's budget [Snapshot], its
// guards' [Guard.Pressure] and the trace's records (decisions, rejections
// and approvals are records; a [kernel.View] does not hold them) into a
// [State]: five pressures and the escalation propensity, each in [0, 1]
// (orchestrator.StepContext.State, orchestrator.Summary.States). The
// measure is a pure function of copies, so it changes nothing, and no code
// reads a State to change a limit or a policy. soft is the run's soft
// threshold; ramp(x) is 0 up to soft, then (x − soft)/(1 − soft), and 1
// from x = 1.
//
//	signal                 formula                                                  rises when
//	budget_pressure        max over limited resources, here and in every ancestor,  a budget passes its soft
//	                       of ramp(used/limit) (tokens: used + held)                threshold
//	loop_pressure          max of: max over calls of (times seen − 1)/allowed;      the guard nears a trip
//	                       idle rounds / idle rounds allowed; replans / limit
//	evidence_pressure      belief proposals unresolved / belief proposals;          belief evidence keeps failing
//	                       unresolved: pending, expired, or rejected with an
//	                       evidence code, and no belief of its kind committed since
//	gate_pressure          max over actions waiting for approval (a pending_        approvals age past the soft
//	                       approval decision record, no approval or denial yet)     band
//	                       of ramp(waited / 30m)
//	conflict_pressure      current percepts flagged conflict and not arbitrated     sources disagree
//	                       (confidence below the threshold) / current percepts
//	escalation_propensity  base + risk·base·(1 − base), with                        pressure builds, more so for
//	                       base = ½·max + ½·mean of the five pressures              risky intents
//
// Every value is clamped to [0, 1]. With no pressure the propensity is 0,
// whatever the risk.
//
// # Wiring
//
// The tool-call gate, before each call: first the loop guard, then the
// budget, both before anything runs. The guard goes first so that a
// looping call does not spend a tool call; it counts the attempt even when
// the budget then refuses.
//
//	digest, err := budget.Digest(call.Args)
//	if err == nil {
//		err = guard.Call(call.Tool, digest)
//	}
//	if err == nil {
//		err = run.Allow(budget.ToolCalls, 1)
//	}
//	if d, refused := budget.RefusalRecord(call.TraceID, call.Tool, err, run.Snapshot()); refused {
//		audit.Append(ctx, k.Governor(), d)
//		// answer the model with d.Code and the refusal's hint; the loop goes on
//	}
//
// The LLM agent loop, through its before-model-call hook, which receives
// the running usage: one [Meter] per agent charges what the last call used
// and admits the next one (or refuses it with BUDGET_EXCEEDED before it is
// sent).
//
//	meter := run.Meter(estimatedTokensPerCall)
//	hook := func(ctx context.Context, u llm.Usage) error {
//		return meter.BeforeModelCall(ctx, int64(u.PromptTokens), int64(u.CompletionTokens))
//	}
//	// when the agent returns: meter.Sync(final prompt, final completion)
//
// The orchestrator calls Allow(Rounds, 1) before each round, [Run.NextTurn]
// between turns, Allow(Replans, 1) before asking for a new plan, and
// [Guard.Round] after each round; it records the measured State with the
// round's result (under "functional_state"). Sub-agent lanes get
// [Run.Sub] and a guard of their own.
//
// # Concurrency
//
// A *Run and its sub-runs are safe for concurrent use by any number of
// goroutines: a run and all its sub-runs share one lock, under which every
// check and its count happen together, so no interleaving of workers can
// pass a limit or count a refused call. A
// *Guard and a *Meter guard their state with a mutex. Snapshots and
// states are values; a refusal is not changed once returned.
package budget
