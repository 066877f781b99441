package budget

// The codes this package adds to the kernel's. They are [reason.Code]
// values, so a refusal by a budget or a loop guard reads like any other
// refusal in a decision record or a tool result.
const ()
