package rules

import "github.com/blackboardkernel/bk/blackboard"

// CodeInputTooLarge: a proposal, or a belief or percept a rule would read,
// holds more than a rule may be given (see the package doc's bounds). The proposal is refused
// before any rule is evaluated: a rule is only bounded in time because its
// input is bounded.
const CodeInputTooLarge = blackboard.Code("RULE_INPUT_TOO_LARGE")
