package budget

import (
	"errors"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
)

// Names the package's external tests use, kept unexported in the package.
const DefaultMaxIdentical = defaultMaxIdentical
const DefaultSoft = defaultSoft

const ToolCallsPerTurn = toolCallsPerTurn

// NewGuardPerTool is NewGuard with per-tool limits on identical calls.
var NewGuardPerTool = newGuard

// ReasonOf returns the [*Refusal] in err's chain.
func ReasonOf(err error) (*Refusal, bool) {
	var rf *Refusal
	ok := errors.As(err, &rf)
	return rf, ok
}

// Payload is the refusal's JSON form as a payload.
func (e *Refusal) Payload() blackboard.Payload { return e.payload() }

func (r *Run) ID() string       { return r.id }
func (r *Run) NextRound() error { return r.Allow(Rounds, 1) }
func (r *Run) ToolCall() error  { return r.Allow(ToolCalls, 1) }
func (r *Run) ModelCall() error { return r.Allow(ModelCalls, 1) }
func (r *Run) Replan() error    { return r.Allow(Replans, 1) }

func (r *Run) ReserveModelCall(estimate int64) (*reservation, error) {
	return r.reserveModelCall(estimate)
}

// Limits returns the run's own limits, with the soft threshold filled in.
func (r *Run) Limits() Limits { return r.limits }

// Deadline returns the earliest deadline of the run and its ancestors.
func (r *Run) Deadline() (time.Time, bool) {
	var at time.Time
	for x := r; x != nil; x = x.parent {
		if d := x.limits.Deadline; d > 0 {
			if t := x.start.Add(d); at.IsZero() || t.Before(at) {
				at = t
			}
		}
	}
	return at, !at.IsZero()
}

// Exhausted lists the resources with nothing left, here or in an
// ancestor, in the order of Resources.
func (s Snapshot) Exhausted() []Resource {
	var out []Resource
	for _, res := range Resources() {
		if left, ok := s.Left(res); ok && left <= 0 {
			out = append(out, res)
		}
	}
	return out
}

// Valid reports whether r is one of the resources Resources lists.
func (r Resource) Valid() bool {
	for _, x := range Resources() {
		if x == r {
			return true
		}
	}
	return false
}
