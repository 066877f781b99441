package rules

import "github.com/blackboardkernel/bk/blackboard"

// CodeInputTooLarge: a proposal, or a belief or percept a rule would read,
// holds more than a rule may be given (see [MaxElements],
// [MaxStringBytes], [MaxDepth], [MaxValues]). The proposal is refused
// before any rule is evaluated: a rule is only bounded in time because its
// input is bounded.
const CodeInputTooLarge = blackboard.Code("RULE_INPUT_TOO_LARGE")

// The bounds on what a rule is given. Every payload a rule can read (the
// proposal's, each belief's and each percept's) is checked against them
// before the first rule runs, and [New] refuses a rule whose worst-case
// cost over inputs within them exceeds its cost limit. Together they bound
// the time of every evaluation, whatever the planner sends.
const (
	// MaxElements bounds the entries of every list and object.
	MaxElements = 1000
	// MaxStringBytes bounds every string (and object key), in bytes.
	MaxStringBytes = 16 << 10
	// MaxDepth bounds the nesting of lists and objects.
	MaxDepth = 32
	// MaxValues bounds the values of one payload, counted over every
	// level.
	MaxValues = 10_000
)
