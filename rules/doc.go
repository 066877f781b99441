// Package rules lets a kernel's owner state domain invariants as
// declarative rules in the Common Expression Language (CEL) and enforce them
// at the gate. Rules are compiled and type-checked once, by [New]; the
// resulting [*Rules] is a [kernel.Validator], so it runs after the kernel's
// built-in checks have passed a proposal and can only make the gate
// stricter:
//
//	rs, err := rules.New(
//		rules.OnAction("refund_within_charge", "issue_refund",
//			`action.amount <= percepts.charge.amount`),
//		rules.OnBelief("refund_due_matches_charge", "refund_due",
//			`value == percepts.charge.refundable`),
//	)
//	k, err := kernel.New(kernel.Config{Validators: []kernel.Validator{rs}})
//
// # What a rule sees
//
// A rule on an action type ([OnAction]) sees
//
//   - action: the action proposal's payload,
//   - beliefs: the payload of every committed, active belief of the trace,
//     by kind,
//   - percepts: the current observation of every percept kind of the
//     trace, by kind.
//
// A rule on a belief kind ([OnBelief]) sees
//
//   - value: the belief's "value" field,
//   - belief: the belief's whole payload,
//   - percepts and beliefs, as above.
//
// Payloads are JSON objects, so numbers are doubles (an int literal compares
// with them as expected: action.amount <= 100), lists are lists and objects
// are maps with string keys. A rule must have type bool; a rule whose type
// is only known at run time (say, action.approved) must yield a bool when
// evaluated.
//
// # When rules apply
//
// Belief rules check a belief proposal of their kind. They are checked again
// whenever a plan or an action is decided, for each belief it rests on
// ([kernel.Candidate.Grounds]), against the percepts as they are now: a
// belief that agreed with the observation it was committed on, but
// contradicts a newer one, no longer grounds anything (value and belief
// are then the committed belief's). Action rules check
// action proposals of their type only, not the steps of a plan: a step
// describes an action still to be proposed, and the action's rules check
// that proposal when it comes. For an action the
// beliefs it rests on are checked first, then its own rules. Predictions are
// never checked.
//
// # Fail closed
//
// A rule that evaluates to false rejects the proposal with
// [reason.RuleViolated]; the verdict names the rule, and its
// detail holds the whole expression, the clause that was false and the
// values that clause read:
//
//	action issue_refund: rule is false: action.amount <= percepts.charge.amount && action.currency == percepts.charge.currency; clause 2 of 2 is false: action.currency == percepts.charge.currency; it read action.currency = "USD", percepts.charge.currency = "EUR"
//
// The clauses are the operands of the rule's top-level && (the first
// false one is named) or || (each is false); a rule with neither is one
// clause. The values are the variables and field chains the clause reads
// (value, action.amount, percepts.charge.currency), as JSON, each cut at
// 200 bytes, "(absent)" for a missing field, the first 16 of them. Only a false rule pays for
// this: its clauses, compiled by [New], are evaluated again on the
// refusal. A rule that cannot be evaluated rejects it with
// [reason.RuleError] and the error as detail: a missing field or
// percept ("no such key"), a type mismatch, a result that is not a bool,
// or a cancelled context. A
// rule never lets a proposal through because it could not decide. Write
// has(percepts.charge) && ... where a field may legitimately be absent.
// (CEL's && and || are commutative with respect to errors: false && error
// is false and true || error is true, so an error on the side that does not
// decide the result is not one.)
//
// # Bounded cost
//
// No rule, however it is written and whatever the payloads hold, can hold
// up the gate. What a rule is given is bounded: a list or object of at
// most 1000 entries, a string of at most 16 KiB, 32 levels and 10 000
// values a payload. Before any rule
// runs, the proposal's payload, the beliefs it rests on and (when a rule
// reads them) the trace's percepts and beliefs are checked against these
// bounds, and a proposal beyond them is refused with [reason.RuleInputTooLarge]
// (RULE_INPUT_TOO_LARGE), naming the value. [New] estimates each rule's
// worst-case cost over inputs within the bounds (CEL's cost model: about
// one unit per field access, comparison or loop iteration) and refuses a
// rule that may cost more than 100 000 units, such as a loop within a
// loop over a proposal's list. The limit and the bounds are the module's
// one set, shared with the tool gate's approval rules and derived beliefs.
// Evaluation then runs in time linear in its
// input, untracked (cel-go's runtime cost tracker costs time quadratic in
// the length of a list a rule walks), and the caller's context interrupts
// it.
//
// # Rules as data
//
// [Rules.Specs] returns the rules as [Spec]s (name, target, kind,
// expression), as a tool gate's policy snapshot records them, and
// [New] compiles them back, to replay a trace under the rules that
// were in force or under changed ones.
//
// # Cost and concurrency
//
// Rules are indexed by slot and kind: checking a proposal no rule applies
// to costs a map lookup (and, for a plan or action when there are belief
// rules, a look at the beliefs it rests on). The percept and belief maps
// are built only when an applicable rule reads them. A [*Rules] is immutable after [New] and
// safe for concurrent use by any number of kernels and goroutines.
package rules
