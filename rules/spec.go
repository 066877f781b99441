package rules

import "fmt"

// The targets a [Spec] names.
const (
	TargetAction = "action"
	TargetBelief = "belief"
)

// Spec is one rule as data: what [OnAction] or [OnBelief] was given. A
// policy snapshot records a rule set as its specs, and [FromSpecs] builds
// the same rules back from them (to replay a trace under them).
type Spec struct {
	Name string `json:"name"`
	// On is [TargetAction] or [TargetBelief].
	On string `json:"on"`
	// Target is the action type or the belief kind the rule applies to.
	Target string `json:"target"`
	Expr   string `json:"expr"`
}

// Specs returns the rules as data, in the order they were given.
func (r *Rules) Specs() []Spec {
	out := make([]Spec, len(r.specs))
	for i, s := range r.specs {
		out[i] = Spec{Name: s.name, On: s.target.String(), Target: s.kind, Expr: s.expr}
	}
	return out
}

// Option returns the option that adds the rule s to [New]; a spec whose
// On is neither [TargetAction] nor [TargetBelief] makes New fail with an
// [*Error] wrapping [ErrInvalidRule].
func (s Spec) Option() Option {
	switch s.On {
	case TargetAction:
		return OnAction(s.Name, s.Target, s.Expr)
	case TargetBelief:
		return OnBelief(s.Name, s.Target, s.Expr)
	}
	return func(c *config) {
		c.bad = append(c.bad, &Error{Rule: s.Name, Err: fmt.Errorf("%w: target %q is neither %q nor %q", ErrInvalidRule, s.On, TargetAction, TargetBelief)})
	}
}

// FromSpecs compiles the rules specs describe, as [New] compiles the
// rules its options give (the same errors), and options add more rules
// after them.
func FromSpecs(specs []Spec, opts ...Option) (*Rules, error) {
	all := make([]Option, 0, len(specs)+len(opts))
	for _, s := range specs {
		all = append(all, s.Option())
	}
	return New(append(all, opts...)...)
}
