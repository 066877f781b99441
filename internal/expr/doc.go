// Package expr is the module's one CEL environment: the options every
// expression environment starts from, the bounds on what an expression is
// given, the cost limit, and the compile and program helpers that enforce
// them. Package rules (validation rules), and toolgate (approval rules and
// derived beliefs) build their environments and programs here, so that an
// expression accepted in one place is bounded the same way in every other.
//
// # Limits
//
// [CostLimit] bounds the worst-case cost of one evaluation. [CheckCost]
// estimates it when an expression is compiled, over inputs within
// [MaxElements], [MaxStringBytes], [MaxDepth] and [MaxValues], and refuses
// an expression over the limit with a [*CostError]; [CheckValue] checks an
// input against the same bounds. A program whose inputs are checked against
// the bounds before evaluation ([Program]) runs untracked, in time linear in
// its input; a program whose inputs are not ([TrackedProgram]) is tracked at
// run time against the same limit. Both check their context every
// [InterruptEvery] comprehension iterations.
//
// # Concurrency
//
// Environments and programs are safe for concurrent use.
package expr
