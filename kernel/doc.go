// Package kernel is the Blackboard Kernel: the one gate through which an
// agent's beliefs and actions pass. Nothing an agent believes or does takes
// effect until it has gone propose → validate → commit, and only the kernel
// commits.
//
// # The blackboard
//
// State lives in seven typed slots ([blackboard.Slot]): [blackboard.Percepts] (raw observations),
// [blackboard.Beliefs] (interpreted state), [blackboard.Constraints] (declarative rules), [blackboard.Plans],
// [blackboard.Evidence] (justification artifacts), [blackboard.Predictions] and [blackboard.Actions]. Each
// entry is a [blackboard.Record] with an id "{slot}:{trace_id}:{n}", a [blackboard.Mode]
// (propose or commit), a kind, a JSON-compatible [blackboard.Payload], [blackboard.Provenance]
// (writer, trace, time, input refs, optional confidence and TTL), evidence
// refs, a [blackboard.Status] and a [blackboard.Scope]. Records are append-only; the only change a
// record ever sees is its status moving from ACTIVE to INVALIDATED or
// EXPIRED, always with a [reason.Code] saying why.
//
// # Roles are capabilities
//
// Whoever owns the [Kernel] (from [New]) hands out role-bound handles:
// [Kernel.Handle] with [blackboard.RoleTool] a [Handle] that commits
// percepts, [Kernel.Proposer] with [blackboard.RolePlanner] a [Proposer]
// of beliefs, plans, predictions and actions, [Kernel.Symbolic] a
// [Symbolic] that commits constraints, [Kernel.Handle] with
// [blackboard.RoleEvidence] a [Handle] that commits evidence,
// [Kernel.Proposer] with [blackboard.RoleSimulator] a [Proposer] of
// predictions. The permission table of the paper's Table 1 bounds what
// each handle may write; no handle
// can write as the kernel, so no caller can commit a belief, prediction or
// action except by asking the kernel to decide a proposal
// ([Proposer.Commit], [Proposer.Submit]). Every handle reads through [View]s
// and the [Reader] methods; [Kernel.Reader] reads and writes nothing.
// Once-keys ([Entry.OnceKeys]), records with the kernel's own role or an
// approver's, and records that follow a decision or a write in its batch
// ([Follow]) are written only through the [Governor], which the owner
// gives to its governance code (the tool gate) and to no one else: every
// handle refuses once-keys and can name no role but its own.
//
// The kernel decides and appends; what governance code records about a
// call is its own. [Governor.Submit] and [Governor.Write] take a function
// that, given the decision or the record, returns follow records appended
// in the same atomic batch, and return their ids ([Decision.Appended], the
// ids Governor.Write returns), so no caller searches a trace for what it
// has just written. Package audit encodes the gate's decision records and approvals
// this way and decodes them. The kernel hands back ids, not copies of
// records ([Decision.CommittedID], the id [Handle.Write] or
// [Governor.Write] returns): a caller that needs a record reads it ([Reader.Get]).
//
// # The pipeline
//
// A commit request gets a [Decision]: COMMITTED (PLAN_FEASIBLE for a plan)
// or a rejection code. A rejection is an outcome, not an error: the proposal
// is kept, INVALIDATED with its code. The checks run in this order:
//
//   - Records whose TTL has run out are marked EXPIRED (TTL_EXPIRED), in
//     the same batch as the decision, and take no further part.
//   - Beliefs (evidence validation), per dependency in order: the percept
//     exists (MISSING_EVIDENCE), is the current observation of its kind
//     (SUPERSEDED_EVIDENCE), is fresh (STALE_EVIDENCE), is conflict-free
//     or arbitrated by confidence at or above the conflict threshold
//     (UNRESOLVED_CONFLICT), and meets the minimum confidence and is not
//     flagged low_confidence by its source (LOW_CONFIDENCE). A committed
//     belief comes with an evidence artifact the kernel writes.
//   - Plans (feasibility), per step: the action is registered if the
//     registry is strict (UNKNOWN_ACTION_TYPE) and grounded in beliefs or a
//     safe fallback (PLAN_UNGROUNDED_ACTION); its beliefs are committed
//     (PLAN_MISSING_BELIEF) and true (PLAN_BELIEF_NOT_SATISFIED); their
//     evidence is still current (the evidence codes); no constraint that
//     applies blocks it ("PLAN_" + [reason.Blocked]).
//   - Actions (gating): the same grounding, belief and evidence checks
//     (UNGROUNDED_ACTION, NO_COMMITTED_BELIEF, BELIEF_NOT_SATISFIED, the
//     evidence codes), no observation it rests on used up by an earlier
//     commit of its type (DUPLICATE_ACTION), the
//     prediction gate when the [ActionSpec] or the payload asks for it
//     (NO_PREDICTION, NEGATIVE_PREDICTION), constraints ([reason.Blocked]),
//     custom validators, then the once-key (DUPLICATE_ACTION,
//     ONCE_KEY_MISSING). Committed plans and actions never expire.
//   - Predictions: they name beliefs, and those are committed
//     (PREDICTION_MISSING_BELIEF). Only predictions of a writer the owner
//     trusts (a simulator, or [ActionSpec.Predictors]) count at the gate.
//   - Custom [Validator]s, given with [Config.Validators], run last on what the
//     built-in checks passed; the rules package compiles declarative rules
//     into one.
//
// "Current" evidence means: when a plan or action is decided, each percept
// its beliefs rest on, and every newer observation of the same kind in the
// trace, must pass the evidence checks as of now. A constraint names the
// action types it applies to (all but safe fallbacks by default) and fails
// closed when it cannot read its field. Constraints may block on flags the
// kernel derives itself ("uses_stale_data", "uses_conflicted_data",
// "uses_low_confidence_data", "has_negative_prediction") or on a percept
// field they bind; a proposal that contradicts either is FIELD_MISMATCH.
//
// A [Decision] explains itself: the rule or constraint that decided, the
// record that failed, and the [Cause]s beneath its code down to the root
// ([Decision.RootCause]).
//
// # Scope and namespaces
//
// Planner and simulator handles cannot write persistent scope. A trace sees
// other traces' persistent records only for constraints, and kinds the
// owner shares ([Config.SharedPersistent]). [Config.Namespace] separates
// applications sharing one store: traces (one trace id in two namespaces
// is two traces), persistent records, once-keys and learned constraints
// belong to a namespace. Views and reads never write.
//
// # Errors
//
// Bad requests fail with an error and store nothing. Every error wraps a
// sentinel ([blackboard.ErrPermission], [blackboard.ErrInvalidInput], [blackboard.ErrInvalidPayload],
// [ErrPayloadTooLarge], [ErrInvalidProposal], [ErrInvalidReference],
// [blackboard.ErrNotFound], [blackboard.ErrDuplicateKey], ...) for errors.Is, and most carry
// the operation, the record id and the [reason.Code], which [CodeOf] reads. Codes are
// stable strings; never parse messages.
//
// # Storage
//
// A [store.Store] persists records; the kernel needs its six operations plus an
// atomic [store.Batch], a per-trace listing and once-keys. [memstore.Store] is the
// default; other stores live under store/ and pass one conformance suite.
// A store that also implements [store.StateStore] keeps each trace's decision
// state with the trace, so that a decision reads that state and the few
// records it names, never the whole trace: its cost does not grow with the
// session, nor with the size of the store.
//
// # Observability
//
// Writes, decisions, views, expiries and the Governor's appends run in OpenTelemetry
// spans ([Config.TracerProvider]; the global provider by default, free until
// an SDK is installed) with the attributes [telemetry.AttrNamespace], [telemetry.AttrTraceID],
// [telemetry.AttrSlot], [telemetry.AttrKind], [telemetry.AttrRecordID], [telemetry.AttrRole], [telemetry.AttrCode],
// [telemetry.AttrRule], [telemetry.AttrFailed]; a refusal sets the span's status, and a
// decision's span links to the spans that wrote the percepts its evidence
// rests on (each record keeps its span in [blackboard.Provenance.Span]). Metrics come
// from [Config.MeterProvider], debug logs of every decision from
// [Config.Logger]. Package inspect reads a trace or a decision back from
// any store, as the paper's traces print them and as a provenance tree.
// [store.ListTraces] lists a store's traces (through the optional
// [store.TraceLister]). docs/observability.md has the tables.
//
// # Concurrency
//
// A [Kernel] and its handles are safe for concurrent use by any number of
// goroutines, on any number of traces or on one. The kernel holds no lock of
// its own: it decides from a fresh read of the trace and writes the result
// as one atomic store batch conditional on that read ([store.Batch.Trace]); if a
// concurrent writer got there first (the trace grew, or the proposal is no
// longer pending) the store refuses the batch and the kernel retries against
// a fresh read, so no decision lands after a change it did not see. So of several
// concurrent commits of one proposal exactly one wins; the others get
// [ErrInvalidProposal]. Time comes from the clock given with [Config.Clock].
//
// # Payload keys
//
// The kernel reads these keys of a payload; everything else in a payload is
// the domain's own and never interpreted. A belief: "value" (its truth
// value, truthy or not) and "depends_on" (the percept kinds it rests on). A
// plan: "steps", each with "action" (its action type) and
// "requires_beliefs". An action: "requires_beliefs", "require_prediction"
// (opts into the prediction gate), "type" (if present, must equal the
// action's kind) and, on a fallback, "reason" (the code that caused it). A
// percept: "stale", "conflict" and "low_confidence" (flags of its source).
// A prediction: "action_type", "expected_outcome" (a number; negative is
// harmful) and "requires_beliefs". A constraint: "name", "enabled",
// "blocks_field", "bind_percept" and "applies_to". The kernel derives
// "uses_stale_data", "uses_conflicted_data", "uses_low_confidence_data" and
// "has_negative_prediction" for every plan step and action itself; a
// proposal cannot set them.
package kernel
