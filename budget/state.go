package budget

import "time"

// State is the functional state of a run at one round: five pressures and
// the escalation propensity, each in [0, 1]. It is an observation, never
// an instruction: nothing in this package or the kernel reads it to change
// a limit, a rule or a decision. Record it with the run's result and show
// it to the workers (a critic may prefer to escalate when Escalation is
// high); policy stays where it is.
type State struct {
	CapturedAt time.Time `json:"captured_at"`
	Round      int64     `json:"round"`
	Budget     float64   `json:"budget_pressure"`
	Loop       float64   `json:"loop_pressure"`
	Evidence   float64   `json:"evidence_pressure"`
	Gate       float64   `json:"gate_pressure"`
	Conflict   float64   `json:"conflict_pressure"`
	Escalation float64   `json:"escalation_propensity"`
}
