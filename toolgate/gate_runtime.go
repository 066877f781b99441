package toolgate

import (
	"context"
	"encoding/json"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/internal/gatehook"
)

// The gate's methods that act on its committed actions and on a trace's
// controls and request. Each is the integrator's door to the executor's
// machinery (executor*.go, recover.go, controls.go, scope.go), which never
// calls back into them.

// Execute runs a committed action of one of the gate's tools, once its
// approval allows it, and returns what came of it. It is how an approved
// call continues (the approver's side calls it), and it is safe to call
// again, from any goroutine or process:
//
//   - If the action already has a recorded result (succeeded, failed or
//     escalated), Execute returns it and starts nothing.
//   - If its policy needs approval and no attempt has started yet, the
//     latest approval decision for it decides: none is [audit.OutcomePendingApproval]
//     (APPROVAL_REQUIRED); a denial, or an approval past its TTL, records
//     the escalation, submits the safe fallback with the code as reason
//     and returns Refused (APPROVAL_DENIED, APPROVAL_EXPIRED); an approval
//     is consumed by the first attempt (a once-key on the approval record,
//     claimed in the attempt's write), so it is used once.
//   - Before the first attempt, the kernel decides the action's evidence
//     and rules again as of now ([kernel.Governor.RecheckAction]): an action
//     whose grounding expired, was superseded or used up, or that a
//     constraint or rule now refuses, is refused for good with the
//     kernel's code (recorded as its result), runs nothing and consumes no
//     approval.
//   - An action of a caller-driven tool (no [Tool.Effect]) not yet
//     started, or whose attempt may be re-driven, is EFFECT_UNAVAILABLE:
//     Execute has no effect for it, so it runs nothing, records nothing
//     and uses up no approval, for the caller's call under the same
//     [Call.RetryKey] with its effect (see docs/effects.md,
//     "Caller-driven tools").
//   - Otherwise it drives the effect: see docs/effects.md on exactly-once
//     execution.
//
// An id that is not a committed action the gate proposed is
// [kernel.ErrInvalidReference]. Other errors are a cancelled context or a store
// failure; the action is then left for a later Execute or [Gate.Recover].
func (g *Gate) Execute(ctx context.Context, actionID string) (Result, error) {
	return g.x.execute(ctx, "", actionID, nil)
}

// Resume is Execute for the caller that holds the arguments about to run
// (an agent loop resuming a call after its approval): args must be the
// committed action's arguments, digest for digest, or the call is refused
// with APPROVAL_MISMATCH (ARGUMENTS_CHANGED for an action that needs no
// approval) and nothing runs. A changed argument needs a new call and a
// new approval. traceID must be the action's trace.
func (g *Gate) Resume(ctx context.Context, traceID, actionID string, args json.RawMessage) (Result, error) {
	if args == nil {
		args = json.RawMessage("{}")
	}
	return g.x.execute(ctx, traceID, actionID, args)
}

// Recover finishes the actions the gate committed and nobody finished: a
// process crashed (or a caller gave up) between a commit and its result.
// It is meant to run at start-up, and may run periodically; it is safe to
// run in several processes at once, and next to live calls.
//
// For every action the gate committed in the kernel's namespace that has
// no recorded result:
//
//   - an attempt whose lease is over is re-driven when the world dedups
//     the effect by its key (a tool with a once-key, or an Idempotent
//     one): the next attempt number, the same idempotency key,
//     within the tool's retry budget (an attempt left without a result
//     counts as used; when none is left, the action fails with
//     EFFECT_RETRIES_EXHAUSTED); any other tool's is recorded as
//     EFFECT_UNKNOWN, for a person, and its effect is not started again;
//   - an attempt whose lease is not over is left to its driver;
//   - a caller-driven tool's action ([Tool.Effect] nil) is never started:
//     Recover has no effect for it. One not yet started, or whose
//     attempt may be re-driven, is left as it is, recorded nothing and
//     not returned, for the caller's call under the same retry key;
//     an attempt that may not be re-driven is EFFECT_UNKNOWN, as above;
//   - an action no attempt was started for is executed, once it is older
//     than the lease (a younger one may be about to start), unless it
//     still waits for its approval; an approval that was denied or has
//     expired escalates to the fallback.
//
// An escalated action whose safe fallback was never submitted (a crash
// between the two) gets it.
//
// An effect whose result is recorded is never started again. Recover
// returns the results of the actions it drove, in no particular order, and
// the errors it met joined (it goes on past an action that fails with an
// error). It reads every decision record of the namespace, so its cost
// grows with the history.
func (g *Gate) Recover(ctx context.Context) ([]Result, error) {
	return g.x.recoverAll(ctx)
}

// The supervisor reads the gate's lease ([Config.Lease]): how long an
// attempt is reserved to its driver. A process that restarts after a
// crash waits it out before [Gate.Recover] can take over the attempts it
// left.
func init() {
	gatehook.Lease = func(g any) time.Duration { return g.(*Gate).lease }
}

// Controls returns the trace's run controls as recorded in the store (by
// this gate or any other over it). Its cost is one indexed lookup for a
// trace without controls, else one more for the mode and one per
// registered tool, whatever the length of the trace. A
// bad trace id is [blackboard.ErrInvalidInput]. Safe for concurrent use.
func (g *Gate) Controls(ctx context.Context, traceID string) (Controls, error) {
	return g.x.controls(ctx, traceID)
}

// Restrict records c as the trace's run controls. Controls only tighten:
// c must keep the trace read-only if it is ([Controls.ReadOnly]) and every tool
// the trace prohibits, else Restrict fails with a [*controlsError]
// ([blackboard.ErrPermission]) and records nothing; c equal to the trace's controls
// records nothing either. A tool the gate does not hold is
// [blackboard.ErrInvalidInput]. The record (evidence of kind [audit.KindControls],
// the controls in full and the gate's policy hash) is written through the
// kernel's Governor and claims one once-key per control it adds and one
// for the controls it read, so concurrent Restricts are ordered and none
// loses another's tightening: the one that finds a key taken reads the
// controls again and retries (a [*controlsError] when the controls it
// was given now loosen them).
//
// Controls bind the calls decided after Restrict returns, and every
// action not yet started: an approval given before the trace became
// read-only never runs its action. An action whose effect has started is
// driven to its result: it may have run. Safe for concurrent use.
func (g *Gate) Restrict(ctx context.Context, traceID string, c Controls) error {
	return g.x.restrict(ctx, traceID, c)
}

// RecordRequest records r as the request trace traceID serves: who the
// agent acts for and what they asked about. It is the owner's to call
// (the application that took the ticket or authenticated the session),
// before the trace's first call of a scoped tool: a call of a tool with
// [Tool.Scope] in a trace without a request is refused with
// OUT_OF_SCOPE. A trace has one request for good: recording an equal one
// again records nothing and returns nil (so a restarted run may record it
// again), another fails with [blackboard.ErrDuplicateKey] (the trace's request
// once-key is taken). A bad trace id or request is
// [blackboard.ErrInvalidInput]. The record (evidence of kind
// [audit.KindRequest]) is written through the kernel's Governor with the
// kernel's role and claims the trace's request once-key, so of concurrent
// recordings one lands. Safe for concurrent use.
func (g *Gate) RecordRequest(ctx context.Context, traceID string, r audit.Request) error {
	return g.x.recordRequest(ctx, traceID, r)
}
