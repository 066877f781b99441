// Package llm puts a language model behind the kernel's planner role (paper
// §10.6) without letting it write anything the agent did not define. The
// model only decides whether to propose; the belief names, their
// dependencies, the plan steps and the action payloads come from the
// agent's governed schema, and the kernel validates every proposal. A
// decline, a rejection or a model failure ends in the safe fallback action
// with a machine-readable reason code.
//
// # Core types
//
//   - [Client] talks to any OpenAI-compatible POST /v1/chat/completions
//     endpoint, with retries (backoff, jitter, Retry-After), a per-request
//     timeout, context cancellation and a concurrency bound. [New] builds it
//     with functional options ([WithModel], [WithAPIKey], [WithTimeout],
//     [WithRetries], [WithConcurrency], ...).
//   - [Extract] pulls the JSON object out of a model's answer: it drops
//     <think> blocks and finds the object in a ``` fence or in prose.
//     Anything else is [ErrUnparsable].
//   - [Planner] asks the model for a [Verdict] on a [Situation]:
//     [Planner.DecideBelief] and [Planner.DecidePlan]. A decline is
//     [CodeNoBelief] or [CodeNoPlan]; an endpoint failure after the retries
//     or an unreadable answer is [CodeError].
//   - [Worker] is a [github.com/blackboardkernel/bk/worker.Worker] driven by
//     a [Schema]: belief, plan, then the action or the fallback, with an
//     [Outcome] from [Worker.Run].
//
// [WithModelSteps] is the one ungoverned switch, off by default: the model
// then writes the plan steps, so the paper's bypass (steps with empty
// requires_beliefs) can be shown to fail with PLAN_UNGROUNDED_ACTION.
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
// key with [WithAPIKey] (for instance from [APIKeyFromEnv], which reads
// BK_LLM_API_KEY). The key is sent as a bearer token and never appears in
// logs, errors or the Client's string form. Reasoning models may need
// [WithMaxTokens] large enough for their <think> block, and accept
// [WithReasoningEffort].
//
// # Errors
//
// Errors wrap the sentinels [ErrInvalidConfig], [ErrEndpoint] (as an
// [*EndpointError] carrying the last status and the attempt count),
// [ErrUnparsable] and [ErrFallbackRejected], or the context's error when
// the caller cancelled; branch with errors.Is and errors.As.
//
// # Concurrency
//
// A [Client] is safe for concurrent use; all its calls share one semaphore,
// so no more than [WithConcurrency] requests are in flight at once, and a
// call waiting for a slot or for a retry returns when its context ends. A
// [Planner] and a [Worker] hold no mutable state and are safe for
// concurrent use (a Worker on different traces at once). Every call that
// can block takes a context and honours its cancellation.
package llm
