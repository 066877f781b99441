// Package replay re-runs a recorded trace through a fresh kernel and tool
// gate, from the store alone, without calling a model or any tool, and
// reports where a decision differs from the record. Under options that
// change the policy ([WithRules], [WithConstraint], [WithTool]) the same
// replay answers "what would this policy have decided on last week's
// traffic?" before it ships. [Trace] is the library call; `bk replay` is
// the command.
//
//	rep, err := replay.Trace(ctx, store, "support_desk", "T1",
//		replay.WithRules(rules.Spec{Name: "refund_within_assessment", On: rules.TargetAction,
//			Target: "issue_refund", Expr: "action.amount <= 50.0"}))
//	// rep.Decisions: each decision recorded and replayed; rep.First: the first that differs
//
// # What is replayed
//
// The trace's decision records name the policy snapshot in force
// ([audit.Policy], by its hash); the replay reads that snapshot from its
// policy record, checks that it hashes to the hash the decisions name
// ([ErrTampered] when it does not, [ErrNoPolicy] when no record holds the
// hash, [ErrNoPolicyNamed] when no decision names one) and builds a gate from it over a memory store: each tool as
// recorded (schema, beliefs it requires, bindings, once-key, approval
// rule, result kind and time to live, derived beliefs), the contracts,
// intents and fallback, and the kernel's rules from their specs
// ([rules.New]). A snapshot that names validators that are code
// (its "opaque" list) cannot be rebuilt from data: [Trace] fails
// with [ErrNotReproducible] rather than replay without them. The kernel's
// clock reads the recorded time of what is being replayed, so evidence
// goes stale, and approvals expire, as they did.
//
// The trace's records are then read in order, and
//
//   - a gate call (its first decision record: a refusal, a commit, or a
//     commit waiting for approval) is made again with the tool, arguments,
//     caller, intent, call id, retry key and compiled context the record
//     names;
//   - a tool's effect returns the action's recorded result, or its recorded
//     failure, and calls nothing; an action the record never ran has no
//     result, and the replay fails it (a note says so);
//   - a recorded approval or denial is given again, by the recorded
//     approver for the recorded digest, with its note and expiry, and the
//     action is run again where the record shows it run after its call
//     (after an approval, or by a recovery);
//   - run controls, compiled contexts, observations that are not the gate's
//     (percepts as recorded), constraints and evidence artifacts are
//     written again as recorded, and a planner's or simulator's proposal
//     (belief, plan, prediction, action) is submitted again for the
//     kernel to decide.
//
// What the kernel and the gate write themselves (commits, the results of
// effects, derived beliefs, fallbacks, decision records) is not copied:
// the replay writes its own, and those are what it compares.
//
// # Masked fields
//
// The records hold a masked field's keyed hash, never its value, so the
// replay needs no key: its tools declare no masked field and take the
// recorded hash as the value (the field's schema relaxed to a string).
// Bindings, once-keys and the approval digest compare the same hashes
// again. An approval rule that reads a masked field would see the hash; a
// note says so.
//
// # The report
//
// [Report] lists every decision: the recorded decision record's id, kind
// and tool, its outcome and code, the replay's, and whether they are the
// [Same], [Changed], [Missing] (the replay made no such decision: the call
// it followed from was decided otherwise) or [Extra]. A call's first
// decision is paired with the replay's decision on the same call; what
// followed from an action (its result, an escalation, a fallback, a
// derived belief) is paired by the action. [Report.First] is the first
// decision that is not the same, and [Report.Notes] say what the replay
// could not reproduce exactly. The same store and options give the same
// report.
//
// # Limits
//
// Budgets and loop guards are not part of the policy snapshot: a call the
// record refused with BUDGET_EXCEEDED or LOOP_DETECTED is decided anew. An
// effect's attempts are not replayed one by one: the recorded result comes
// back on the first. A failure the gate typed from the effect's run
// (EFFECT_UNKNOWN after a crash, EFFECT_INCOMPLETE from a tool's Expect,
// which the snapshot does not hold) is replayed as EFFECT_FAILED, with a
// note. The kernel's thresholds and belief specs are the defaults. A
// decision record that names no policy snapshot is not the gate's (an
// orchestrator's, say) and is not compared; the proposal it decided, if a
// planner's, is. A trace decided under several policies (an application
// restarted with another) is replayed under each where its decision
// records name it ([Report.Policies]).
//
// # Concurrency
//
// [Trace] may be called concurrently: each call builds its own kernel,
// gate and memory store, and only reads the source store.
package replay
