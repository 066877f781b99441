package rules

import "slices"

// The targets a [Spec] names.
const (
	TargetAction = "action"
	TargetBelief = "belief"
)

// Spec is one rule as data: what [OnAction] and [OnBelief] return and
// [New] compiles. A policy snapshot records a rule set as its specs
// ([Rules.Specs]), and New builds the same rules back from them (to
// replay a trace under them).
type Spec struct {
	Name string `json:"name"`
	// On is [TargetAction] or [TargetBelief].
	On string `json:"on"`
	// Target is the action type or the belief kind the rule applies to.
	Target string `json:"target"`
	Expr   string `json:"expr"`
}

// Specs returns the rules as data, in the order they were given: [New]
// of them compiles the same rules.
func (r *Rules) Specs() []Spec { return slices.Clone(r.specs) }
