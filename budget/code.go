package budget

import "github.com/blackboardkernel/bk/blackboard"

// The codes this package adds to the kernel's. They are [blackboard.Code]
// values, so a refusal by a budget or a loop guard reads like any other
// refusal in a decision record or a tool result.
const (
	// CodeBudgetExceeded: a call was refused before it was made because a
	// budget of the run (or of a run it draws on) had nothing left for it.
	CodeBudgetExceeded = blackboard.Code("BUDGET_EXCEEDED")
	// CodeLoopDetected: a call or a round was stopped by the loop guard,
	// because the same call came again too often or rounds went by that
	// changed nothing.
	CodeLoopDetected = blackboard.Code("LOOP_DETECTED")
)
