// Package advisor is the governed planner's question to a model (paper
// §10.6): worker/llm's Worker and the study's llm_bk agent (bench/study)
// ask an [Advisor] whether to propose a belief or a plan, shown a
// [Situation], and get its [Advice]. The model only says yes or no; every
// name, dependency and payload comes from the caller's schema, except
// under the deliberately ungoverned [Advisor.ModelSteps]. A decline is
// [reason.LLMNoBelief] or [reason.LLMNoPlan]; a failed request or an unreadable answer
// is [reason.LLMError], never an error.
//
// [Extract] reads the JSON object out of a model's answer: it drops
// <think> blocks and finds the object in a ``` fence or in prose; anything
// else is [ErrUnparsable]. FuzzExtract fuzzes it.
//
// An Advisor holds no state besides its Chat function; it is safe for
// concurrent use when that is.
package advisor
