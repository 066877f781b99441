package study

import "errors"

// Sentinel errors. Every error [Run] and [LoadTasks] return for bad input
// wraps one of these, so callers branch with errors.Is; the message names
// the offending value and, for unknown names, lists the valid ones.
var (
	// ErrUnknownTask: a task id that is not in the task set.
	ErrUnknownTask = errors.New("study: unknown task")
	// ErrUnknownAgent: an agent name that is not registered.
	ErrUnknownAgent = errors.New("study: unknown agent")
	// ErrInvalidTask: a task file that is not valid JSON or misses a field.
	ErrInvalidTask = errors.New("study: invalid task")
	// ErrInvalidConfig: a bad seed count, parallelism, list or LLM setting.
	ErrInvalidConfig = errors.New("study: invalid configuration")
	// ErrEndpoint: [CheckEndpoint] could not get a chat completion from
	// the LLM endpoint (unreachable, refusing, failing or not speaking the
	// OpenAI wire format). The error also wraps worker/llm's.
	ErrEndpoint = errors.New("study: LLM endpoint failed")
)
