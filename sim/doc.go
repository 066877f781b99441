// Package sim provides governed forward dynamics (paper §11.3): declarative
// [Rule] values (the paper's SimRule) and the simulator, the
// orchestrator.Worker that [New] returns, which turns matching rules into
// predictions in the kernel's predictions slot.
//
// A rule names an action type, the outcome it predicts (a number; negative
// means harmful), the beliefs the prediction rests on, a confidence, and
// [Condition] values on committed percept and belief fields. The operators
// ([Condition.Op]) are eq, ne, gt, lt, gte and lte. Numbers compare by value whatever
// Go or JSON type they arrive as; a missing field or a type mismatch makes a
// condition, and so its rule, not match — never a panic. Rules are plain
// data: [LoadRules] reads them from JSON.
//
// The simulator only proposes. The kernel commits a prediction when the
// beliefs it requires are committed in the trace, and refuses it otherwise
// with PREDICTION_MISSING_BELIEF. Actions whose type is registered with
// RequirePrediction (or that ask for require_prediction) then pass the
// kernel's prediction gate only with a committed, non-negative prediction:
// NO_PREDICTION without one, NEGATIVE_PREDICTION with a negative one.
//
// # Concurrency
//
// The simulator holds no mutable state after [New]: it reads what it
// already proposed from the trace. It is safe for concurrent use on
// different traces; two concurrent steps on one trace may both propose the
// same rule (the kernel decides each). [Rule] and [Condition] values are
// plain data, safe to share once no one modifies them.
package sim
