package pressure

import (
	"math"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/budget"
	"github.com/blackboardkernel/bk/internal/ramp"
	"github.com/blackboardkernel/bk/reason"
)

// approvalTTL is how long an action may wait for its approval before the
// wait counts as a stall.
const approvalTTL = 30 * time.Minute

// Inputs is what [Measure] reads: copies of the accumulators and the
// trace's records, all values, so that measuring changes nothing.
type Inputs struct {
	// Budget is the run's snapshot ([budget.Run.Snapshot]).
	Budget budget.Snapshot
	// Loop is the loop guard's pressure ([budget.Guard.Pressure]; with several
	// guards, the highest); zero without a guard.
	Loop float64
	// Trace is the trace's records in append order (a handle's Trace),
	// rejected proposals and decision records included: a [kernel.View]
	// holds neither.
	Trace []blackboard.Record
	// Now is the time of the measure; zero means Budget.TakenAt.
	Now time.Time
	// ConflictThreshold is the kernel's ([kernel.Config.ConflictThreshold]);
	// zero means the kernel's default, 0.7.
	ConflictThreshold float64
	// Risk is the risk class of the run's intent in [0, 1] (0 for routine,
	// 1 for the riskiest); it amplifies the escalation propensity.
	Risk float64
}

// evidenceCodes are the rejections that mean a belief's evidence did not
// hold.
var evidenceCodes = map[reason.Code]bool{
	reason.MissingEvidence: true, reason.StaleEvidence: true, reason.UnresolvedConflict: true,
	reason.LowConfidence: true, reason.SupersededEvidence: true,
}

// Measure computes the functional state from in: a pure function of its
// input, which it does not modify. The formulas are in the package
// documentation.
func Measure(in Inputs) budget.State {
	now := in.Now
	if now.IsZero() {
		now = in.Budget.TakenAt
	}
	soft := in.Budget.Soft
	if !(soft > 0 && soft <= 1) {
		soft = budget.DefaultLimits().Soft
	}
	s := budget.State{
		CapturedAt: now,
		Round:      in.Budget.Round,
		Budget:     clamp(in.Budget.Budget),
		Loop:       loopPressure(in.Budget, in.Loop),
		Evidence:   evidencePressure(in.Trace),
		Gate:       gatePressure(in.Trace, now, approvalTTL, soft),
		Conflict:   conflictPressure(in.Trace, now, in.ConflictThreshold),
	}
	s.Escalation = escalation(clamp(in.Risk), s.Budget, s.Loop, s.Evidence, s.Gate, s.Conflict)
	return s
}

// loopPressure: the highest of the guard's pressure (repeated calls and
// idle rounds) and the re-plans over their limit.
func loopPressure(b budget.Snapshot, guard float64) float64 {
	p := clamp(guard)
	if limit := b.Limits[budget.Replans]; limit > 0 {
		p = math.Max(p, clamp(b.Used[budget.Replans]/limit))
	}
	return p
}

// evidencePressure: of the trace's belief proposals, the share still
// unresolved: rejected for its evidence, pending or expired, with no
// belief of its kind committed since.
func evidencePressure(trace []blackboard.Record) float64 {
	var proposals, unresolved int
	for i := range trace {
		r := &trace[i]
		if r.Slot != blackboard.Beliefs || r.Mode != blackboard.ModePropose {
			continue
		}
		proposals++
		stalled := r.Status == blackboard.StatusActive || r.Status == blackboard.StatusExpired ||
			r.Status == blackboard.StatusInvalidated && evidenceCodes[r.Reason]
		if stalled && !committedAfter(trace, i, r.Kind) {
			unresolved++
		}
	}
	if proposals == 0 {
		return 0
	}
	return clamp(float64(unresolved) / float64(proposals))
}

// committedAfter reports whether a belief of kind was committed after
// trace[i].
func committedAfter(trace []blackboard.Record, i int, kind string) bool {
	for _, r := range trace[i+1:] {
		if r.Slot == blackboard.Beliefs && r.Mode == blackboard.ModeCommit && r.Kind == kind {
			return true
		}
	}
	return false
}

// gatePressure: the oldest wait for an approval, as a share of the
// approval TTL, past the soft threshold. An action waits from the kernel's
// pending_approval decision record until an approval or a denial names
// it.
func gatePressure(trace []blackboard.Record, now time.Time, ttl time.Duration, soft float64) float64 {
	answered := make(map[string]bool)
	for i := range trace {
		if a, ok := audit.ApprovalOf(trace[i]); ok {
			answered[a.ActionID] = true
		}
	}
	var p float64
	for i := range trace {
		r := &trace[i]
		d, ok := audit.Of(*r)
		if !ok || d.Outcome != audit.OutcomePendingApproval || answered[d.Subject] {
			continue
		}
		age := now.Sub(time.UnixMilli(r.Provenance.TimestampMS))
		p = math.Max(p, ramp.Of(float64(age)/float64(ttl), soft))
	}
	return p
}

// conflictPressure: of the percept kinds whose current observation (the
// latest one not invalidated, as the kernel reads it) has not expired, the
// share whose observation is flagged conflict and not arbitrated (no
// confidence, or one below the threshold).
func conflictPressure(trace []blackboard.Record, now time.Time, threshold float64) float64 {
	if threshold <= 0 {
		threshold = defaultConflictThreshold
	}
	current := make(map[string]*blackboard.Record)
	for i := range trace {
		r := &trace[i]
		if r.Slot == blackboard.Percepts && r.Mode == blackboard.ModeCommit && r.Status != blackboard.StatusInvalidated {
			current[r.Kind] = r
		}
	}
	var kinds, conflicted int
	for _, r := range current {
		if r.Status == blackboard.StatusExpired || r.ExpiredAt(now.UnixMilli()) {
			continue // stale evidence, not a conflict
		}
		kinds++
		if c := r.Provenance.Confidence; r.Payload.Bool("conflict") && (c == nil || *c < threshold) {
			conflicted++
		}
	}
	if kinds == 0 {
		return 0
	}
	return clamp(float64(conflicted) / float64(kinds))
}

// escalation: half the highest pressure plus half their mean, then
// amplified by the intent's risk: base + risk × base × (1 − base). No
// pressure means no propensity, whatever the risk.
func escalation(risk float64, pressures ...float64) float64 {
	var top, sum float64
	for _, p := range pressures {
		top = math.Max(top, p)
		sum += p
	}
	base := 0.5*top + 0.5*sum/float64(len(pressures))
	return clamp(base + risk*base*(1-base))
}

// clamp bounds v to [0, 1]; NaN becomes 0.
func clamp(v float64) float64 {
	switch {
	case !(v > 0):
		return 0
	case v > 1:
		return 1
	}
	return v
}

// defaultConflictThreshold is the kernel's ConflictThreshold when its
// Config leaves it zero.
const defaultConflictThreshold = 0.7
