package llm

import (
	"context"
	"time"

	"github.com/blackboardkernel/bk/toolgate"
)

// Names the package's external tests use, kept unexported in the package.

const DefaultMaxRounds = defaultMaxRounds

// The chat completions wire types.
type (
	Message      = message
	ToolCall     = toolCall
	FunctionCall = functionCall
	Completion   = completion
	ToolCaller   = toolCaller
)

// Complete is the client's tool-calling request.
func (c *Client) Complete(ctx context.Context, msgs []Message, tools []toolgate.Spec) (Completion, error) {
	return c.complete(ctx, msgs, tools)
}

// Send is complete without tools, returning the content.
func (c *Client) Send(ctx context.Context, msgs []Message) (string, error) {
	out, err := c.complete(ctx, msgs, nil)
	return out.Content, err
}

// EndpointError is the error of a failed chat call.
type EndpointError = endpointError

// Status and Attempts are the EndpointError's last status and requests.
func (e *endpointError) Status() int   { return e.status }
func (e *endpointError) Attempts() int { return e.attempts }

// Add is the saturating sum of usages.
func (u Usage) Add(v Usage) Usage { return u.add(v) }

// Messages is the run's conversation.
func Messages(r AgentResult) []Message { return r.messages }

// NewAgentFor is NewAgent on any gate (a fake).
func NewAgentFor(c *Client, g ToolCaller, opts ...AgentOption) (*Agent, error) {
	return newAgent(c, g, opts...)
}

// WithSleep and WithJitter replace the client's waits and jitter.
func WithSleep(sleep func(ctx context.Context, d time.Duration) error) Option {
	return withSleep(sleep)
}
func WithJitter(rand func() float64) Option { return withJitter(rand) }
