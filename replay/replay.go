package replay

import (
	"context"
	"slices"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/rules"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/toolgate"
)

// Option changes the policy a trace is replayed under: the "changed
// policy" whose decisions on recorded traffic a replay reports.
type Option func(*config)

type config struct {
	rules       []rules.Spec
	constraints []kernel.Constraint
	tools       []toolChange
}

type toolChange struct {
	name   string
	change func(*toolgate.Tool)
}

// WithRules replays under these rules: each replaces the recorded rule of
// the same name, in its place, or is added after the recorded rules. A
// spec with neither On nor Target changes only the expression of the
// recorded rule of its name (what `bk replay --rule NAME=EXPR` gives); one
// that names no recorded rule makes [Trace] fail with [ErrInvalidOption].
func WithRules(specs ...rules.Spec) Option {
	return func(c *config) { c.rules = append(c.rules, specs...) }
}

// WithConstraint commits each constraint in the replayed trace, with
// episode scope, before its first record is replayed: the decisions then
// show what the constraint would have blocked.
func WithConstraint(cs ...kernel.Constraint) Option {
	return func(c *config) { c.constraints = append(c.constraints, cs...) }
}

// WithTool changes a tool's governance in the recorded policy for the
// replay: change is given the [toolgate.Tool] the replay rebuilds from the
// policy snapshot (its approval rule, once-key, bindings, scope, ...) to
// modify in place before the replayed gate is built. Its Effect and Retry
// are the replay's: a change to them replays something else than the
// recorded results. A name the policy does not hold makes [Trace] fail
// with [ErrInvalidOption].
func WithTool(name string, change func(*toolgate.Tool)) Option {
	return func(c *config) { c.tools = append(c.tools, toolChange{name, change}) }
}

// Match says how a replayed decision compares with the recorded one.
type Match string

// How a [Comparison]'s two sides match.
const (
	// Same: the replay decided as recorded (outcome and code).
	Same Match = "same"
	// Changed: both decided, differently.
	Changed Match = "changed"
	// Missing: recorded, and the replay made no such decision (the call
	// it followed from was decided otherwise).
	Missing Match = "missing"
	// Extra: the replay made a decision the record does not hold.
	Extra Match = "extra"
)

// Comparison is one decision of the trace, recorded and replayed: on each
// side what it came to, as a decision record says it ([audit.Outcome]:
// committed, refused, pending_approval, executed, failed, escalated) and
// its code.
type Comparison struct {
	// Record is the recorded decision record (or, for a planner's
	// proposal, the proposal); empty for an [Extra] decision.
	Record string `json:"record,omitempty"`
	// Replayed is the replay's record of it; empty for a [Missing] one.
	Replayed string `json:"replayed,omitempty"`
	// Kind is the action type, or the belief or plan kind.
	Kind string `json:"kind"`
	// Tool is the tool of a gate call's decision.
	Tool string `json:"tool,omitempty"`
	// Stage is what the decision is about: "call" (the gate and kernel's
	// decision on a tool call), "effect" (its recorded result), "escalate",
	// "fallback", "derive" (a belief its result derived), "propose" (a
	// planner's proposal).
	Stage string `json:"stage"`
	// Recorded and RecordedCode are the recorded decision's outcome and
	// code; empty for an [Extra] decision.
	Recorded     audit.Outcome `json:"recorded,omitempty"`
	RecordedCode reason.Code   `json:"recorded_code,omitempty"`
	// Replay and ReplayCode are the replay's; empty for a [Missing] one.
	Replay     audit.Outcome `json:"replay,omitempty"`
	ReplayCode reason.Code   `json:"replay_code,omitempty"`
	Match      Match         `json:"match"`
}

// Report is what a replay found: every decision of the trace, recorded
// and replayed, in the order of the recorded trace (a decision only the
// replay made follows the recorded ones of the same step). The same store
// and options give the same report.
type Report struct {
	Namespace string `json:"namespace"`
	TraceID   string `json:"trace_id"`
	// Policies are the policy hashes the trace's decision records name,
	// in the order first named.
	Policies  []string     `json:"policies"`
	Decisions []Comparison `json:"decisions"`
	// Counts counts the decisions by [Match]: every Match is a key.
	Counts map[Match]int `json:"counts"`
	// First is the index in Decisions of the first that is not [Same];
	// -1 when the replay decided everything as recorded.
	First int `json:"first_divergence"`
	// Notes say what the replay could not reproduce exactly (an approval
	// it could not apply, a failure code it replays as another, arguments
	// the record does not hold), sorted.
	Notes []string `json:"notes,omitempty"`
}

// Trace replays trace traceID of namespace from src alone, without
// calling a model or any tool, and reports where a decision differs
// from the record (see the package doc for what is replayed and how).
// An empty namespace is [blackboard.DefaultNamespace]. It only reads
// src.
//
// Its errors wrap [ErrNoTrace], [ErrNoPolicyNamed], [ErrNoPolicy],
// [ErrTampered], [ErrNotReproducible] or [ErrInvalidOption] (and the
// cause, when there is one) and name the trace, and the policy hash and
// record at fault when there are; or they are a read of src that failed,
// or ctx's error.
func Trace(ctx context.Context, src store.Store, namespace, traceID string, opts ...Option) (Report, error) {
	var cfg config
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if namespace == "" {
		namespace = blackboard.DefaultNamespace
	}
	r := newReplayer(src, namespace, traceID, &cfg)
	defer r.close()
	if err := r.scan(ctx); err != nil {
		return Report{}, err
	}
	if err := r.loadPolicies(ctx); err != nil {
		return Report{}, err
	}
	if err := r.walk(ctx); err != nil {
		return Report{}, err
	}
	rep := r.report()
	rep.Policies = slices.Clone(r.hashes)
	return rep, nil
}
