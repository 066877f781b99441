// Package kernel is the Blackboard Kernel: the one gate through which an
// agent's beliefs and actions pass. Nothing an agent believes or does takes
// effect until it has gone propose → validate → commit, and only the kernel
// commits.
//
// # The blackboard
//
// State lives in seven typed slots ([Slot]): [Percepts] (raw observations),
// [Beliefs] (interpreted state), [Constraints] (declarative rules), [Plans],
// [Evidence] (justification artifacts), [Predictions] and [Actions]. Each
// entry is a [Record] with an id "{slot}:{trace_id}:{n}", a [Mode]
// (propose or commit), a kind, a JSON-compatible [Payload], [Provenance]
// (writer, trace, time, input refs, optional confidence and TTL), evidence
// refs, a [Status] and a [Scope]. Records are append-only; the only change a
// record ever sees is its status moving from ACTIVE to INVALIDATED or
// EXPIRED, always with a [Code] saying why.
//
// # Roles are capabilities
//
// Whoever owns the [Kernel] (from [New]) hands out role-bound handles:
// [Tool] commits percepts, [Planner] proposes beliefs, plans, predictions
// and actions, [Symbolic] commits constraints, [EvidenceValidator] commits
// evidence, [Simulator] proposes predictions. The permission table of the
// paper's Table 1 ([Allowed]) bounds what each handle may write; no handle
// can write as the kernel, so no caller can commit a belief, prediction or
// action except by asking the kernel to decide a proposal
// ([Planner.Commit], [Planner.Submit]). Every handle reads through [View]s
// and the [Handle] methods.
//
// # The pipeline
//
// A commit request gets a [Decision]: COMMITTED (PLAN_FEASIBLE for a plan)
// or a rejection code. A rejection is an outcome, not an error: the proposal
// is kept, INVALIDATED with its code. The checks run in this order:
//
//   - Records whose TTL has run out are marked EXPIRED (TTL_EXPIRED) and take
//     no further part.
//   - Beliefs (evidence validation), per dependency in order: the percept
//     exists (MISSING_EVIDENCE), is fresh (STALE_EVIDENCE), is conflict-free
//     or arbitrated by confidence at or above the conflict threshold
//     (UNRESOLVED_CONFLICT), and meets the minimum confidence
//     (LOW_CONFIDENCE). A committed belief comes with an evidence artifact
//     the kernel writes.
//   - Plans (feasibility), per step: the action is registered if the
//     registry is strict (UNKNOWN_ACTION_TYPE) and grounded in beliefs or a
//     safe fallback (PLAN_UNGROUNDED_ACTION); its beliefs are committed
//     (PLAN_MISSING_BELIEF) and true (PLAN_BELIEF_NOT_SATISFIED); no enabled
//     constraint blocks it ([PlanBlockedCode]).
//   - Actions (gating): the same grounding and belief checks
//     (UNGROUNDED_ACTION, NO_COMMITTED_BELIEF, BELIEF_NOT_SATISFIED), the
//     prediction gate when the [ActionSpec] or the payload asks for it
//     (NO_PREDICTION, NEGATIVE_PREDICTION), then constraints ([BlockedCode]).
//   - Predictions: the beliefs they rest on are committed
//     (PREDICTION_MISSING_BELIEF).
//   - Custom [Validator]s, given with [WithValidators], run last on what the
//     built-in checks passed.
//
// Constraints may block on flags the kernel derives itself from a step's or
// action's evidence chain ([KeyUsesStaleData], [KeyUsesConflictedData],
// [KeyUsesLowConfidenceData], [KeyHasNegativePrediction]) or on a percept
// field they bind; a proposal that contradicts either is FIELD_MISMATCH.
//
// # Errors
//
// Bad requests fail with an error and store nothing. Every error wraps a
// sentinel ([ErrPermission], [ErrInvalidInput], [ErrInvalidPayload],
// [ErrPayloadTooLarge], [ErrInvalidProposal], [ErrInvalidReference],
// [ErrNotFound], ...) for errors.Is, and most come as an [*Error] carrying
// the operation, the record id and the [Code] for errors.As. Codes are
// stable strings; never parse messages.
//
// # Storage
//
// A [Store] persists records; the kernel needs its six operations plus an
// atomic [Batch] and a per-trace listing. [MemStore] is the default; other
// stores live under store/ and pass one conformance suite. Decisions and
// [View]s read only one trace (plus persistent records), so an episode's
// cost does not grow with the size of the store.
//
// # Concurrency
//
// A [Kernel] and its handles are safe for concurrent use by any number of
// goroutines, on any number of traces or on one. The kernel holds no lock of
// its own: it decides from a fresh read of the trace and writes the result
// as one atomic store batch conditional on that read ([Batch.Trace]); if a
// concurrent writer got there first (the trace grew, or the proposal is no
// longer pending) the store refuses the batch and the kernel retries against
// a fresh read, so no decision lands after a change it did not see. So of several
// concurrent commits of one proposal exactly one wins; the others get
// [ErrInvalidProposal]. Time comes from the clock given with [WithClock].
package kernel
