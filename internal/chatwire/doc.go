// Package chatwire holds the parts of the OpenAI-compatible chat
// completions format the module speaks: a message, a tool call and the
// function it calls. The model client of package worker/llm uses them, and
// so do the scripted model servers of the examples and tests, so that
// both ends read and write one definition of the format.
package chatwire
