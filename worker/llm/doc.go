// Package llm puts a language model behind the kernel's planner role (paper
// §10.6) without letting it write anything the agent did not define. The
// model only decides whether to propose; the belief names, their
// dependencies, the plan steps and the action payloads come from the
// agent's governed schema, and the kernel validates every proposal. A
// decline, a rejection or a model failure ends in the safe fallback action
// with a machine-readable reason code. For models that call tools, an
// [Agent] runs the tool-calling conversation and hands every call to the
// tool gate, which decides it and runs only what the kernel committed.
//
// # Core types
//
//   - [Client] talks to any OpenAI-compatible POST /v1/chat/completions
//     endpoint, with retries (backoff, jitter, Retry-After), a per-request
//     timeout, context cancellation and a concurrency bound. [New] builds it
//     with functional options ([WithModel], [WithAPIKey], [WithTimeout],
//     [WithRetries], [WithConcurrency], ...); [Client.Chat] asks it one
//     question (a system prompt and a user message) and returns the text.
//   - [Worker] is an [github.com/blackboardkernel/bk/orchestrator.Worker]
//     driven by a [Schema]: it asks the model whether to propose the
//     belief, then the plan, and submits them and the action or the
//     fallback, with a [Report] from [Worker.Run]. The model answers
//     {"propose": true|false, "reason": "..."} (a <think> block, a ```
//     fence or prose around the object are read through). A decline is
//     [reason.LLMNoBelief] or [reason.LLMNoPlan]; an endpoint failure after the retries
//     or an unreadable answer is [reason.LLMError].
//   - [Agent] runs one [Task] as a tool-calling conversation through a
//     [github.com/blackboardkernel/bk/toolgate.Gate], and returns an
//     [AgentResult]: the answer, each call with the gate's [ToolResult],
//     the trajectory and the token [Usage]. With [WithCompiler] each
//     round's request is a compiled context instead of the conversation.
//
// [Schema.ModelSteps] is the one ungoverned switch, off by default: the
// model then writes the plan steps, so the paper's bypass (steps with empty
// requires_beliefs) can be shown to fail with PLAN_UNGROUNDED_ACTION.
//
// # Tool calling
//
// An [Agent]'s requests speak the OpenAI chat completions format. Each tool,
// a [github.com/blackboardkernel/bk/toolgate.Spec], goes out as {"type":
// "function", "function": {name, description, parameters}} with
// "tool_choice": "auto" (a spec without parameters gets an empty object
// schema). The answer's choices[0].message.tool_calls are read with their
// ids and their arguments as the text the model wrote (servers that send
// the arguments as an object instead of a string are read too), and the
// token counts from "usage". The conversation carries the assistant's tool
// calls (content null) and one {"role": "tool", "tool_call_id": ...,
// "content": ...} message per call. Retries, the timeout and key hygiene
// are those of [Client.Chat]. A surface the gate built wrong (a tool
// without a name, a name twice, parameters that are not a JSON object)
// fails before the request with [ErrInvalidConfig].
//
// An [Agent] never runs a tool. Each round it asks the gate for the tool
// surface (a tool may appear or disappear as beliefs commit), calls the
// [WithBeforeModelCall] hook with the usage so far (the seam for budgets),
// calls the model, and hands every tool call to the gate
// ([github.com/blackboardkernel/bk/toolgate.Gate.Call]) in order. The
// gate's answer, a [github.com/blackboardkernel/bk/toolgate.Result], goes
// back to the model as the tool message, rendered by
// [github.com/blackboardkernel/bk/toolgate.Result.ForModel] as compact
// JSON: outcome, code, root cause code and record, a failure's status and
// category, repair hint, approval id, output (never an effect's error
// text). So a refusal reaches the model as data it can act on, and the
// model can repair its call.
//
// What the gate receives: calls of tools that were not on the surface go to
// the gate like any other (it refuses them). Arguments that are valid JSON
// go as written; empty arguments as {}; arguments that are not valid JSON
// as a JSON string holding the model's text, which is not an object, so the
// gate refuses them as invalid arguments and its record keeps what the
// model wrote. A call without an id, or with an id used earlier in the run,
// gets "call_<round>_<index>". The run ends when the model answers without
// calling a tool, or with [ErrMaxRounds] after [WithMaxRounds] rounds
// (default 8); the calls of that last round were decided
// too. An error from the gate, the hook, the endpoint or the context also
// ends it, and the [AgentResult] still reports what happened until then.
//
// # Compiled contexts
//
// With [WithCompiler] the model is not sent the growing conversation:
// each round the agent compiles a context for the round (package pack)
// from the task's mission ([Task.System]) and request ([Task.User]), one
// progress line per earlier tool call, the gate's answers to the last
// round's calls, the surfaced tools, and the safety mode and policy in
// force read from the gate (pack.Govern); the compiler adds the trace's
// current evidence and compresses above 90 % of its window. The agent
// records the context, sends its prompt as the one user message with the
// schemas of the tools it shows, and names the record in every
// toolgate.Call.Context of the round, so each decision record says what
// the model was shown ([AgentResult.Contexts]; `bk explain` prints it).
//
// # Budgets, loop guards and grants
//
// A [Task] may carry the run budget it spends ([Task.Budget], a
// budget.Run or a lane's sub-run), a loop guard ([Task.Guard]) and a grant
// ([Task.Grant], a failure.Grant granted by whoever runs the worker).
// Each round begins a new turn of the budget; before each model call the
// agent charges the tokens the earlier calls reported and admits the next
// call, and a spent budget (tokens, model calls, cost, deadline) stops
// the run before the request is sent, with an error holding the
// *budget.Refusal. Tool calls carry the budget and the guard to the gate,
// which checks them before anything else; its refusal (BUDGET_EXCEEDED,
// LOOP_DETECTED, with the reason's hint) reaches the model as the tool's
// result.
//
// Each tool call handed to the gate is a turn of the run's trajectory
// ([AgentResult.Trajectory]): ok, or the failure's status and category as
// toolgate.Result.Failure types it. Under a grant, the yield check runs
// after every call: a skill failure (a syntax error, bad arguments, a
// precondition to establish) lets the model go on; any other ends the run
// at once with an error wrapping [ErrGrantEnded] and the failure (so
// failure.Classify returns it), whose message says how the grant ended,
// why, and its compact trajectory; the calls left in that round are
// answered as not run.
// When every turn is used, the model gets one last call without tools, to
// answer with what it has.
//
// A failed model call wraps [ErrEndpoint] and reports its HTTP status
// (an HTTPStatus() int method in its chain), so failure.Classify types it
// exactly (401 auth_error, 429 rate_limit, 503 provider_down, no answer
// network).
//
// # Pointing it at a model server
//
// [New] takes the server's base URL, with or without the trailing /v1:
//
//	vLLM              http://localhost:8000        (vllm serve MODEL)
//	Ollama            http://localhost:11434       (ollama serve)
//	llama.cpp server  http://localhost:8080        (llama-server -m FILE)
//	hosted APIs       https://api.openai.com, or the provider's base URL
//
// Pass the served model's name with [WithModel] and, for a hosted API, the
// key with [WithAPIKey] (the bench harness and the examples read it from
// BK_LLM_API_KEY). The key is sent as a bearer token and never appears in
// logs, errors or the Client's string form. Reasoning models may need
// [WithMaxTokens] large enough for their <think> block, and accept
// [WithReasoningEffort].
//
// # Errors
//
// Errors wrap the sentinels [ErrInvalidConfig], [ErrEndpoint] (reporting
// the last status through HTTPStatus; its message has the attempt count),
// [ErrFallbackRejected], [ErrMaxRounds] and [ErrGrantEnded], the
// context's error when the caller cancelled, or (from an [Agent]) the
// gate's, the budget's or the hook's error; branch with errors.Is and
// errors.As. A model's unreadable answer is no error: the [Worker] records
// it as [reason.LLMError], with the reason in [Report].Detail.
//
// # Concurrency
//
// A [Client] is safe for concurrent use; all its calls share one semaphore,
// so no more than [WithConcurrency] requests are in flight at once, and a
// call waiting for a slot or for a retry returns when its context ends. A
// [Worker] and an [Agent] hold no mutable state and are safe
// for concurrent use (a Worker on different traces at once, an Agent on
// different tasks). Every call that
// can block takes a context and honours its cancellation.
package llm
