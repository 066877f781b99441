package study

import (
	"context"
	"fmt"
	"time"

	"github.com/blackboardkernel/bk/worker/llm"
)

// EndpointTimeout bounds [CheckEndpoint]'s one request: long enough for a
// local server to load its model, short enough that a host that never
// answers fails the run at once rather than episode by episode.
const EndpointTimeout = 90 * time.Second

// CheckEndpoint asks the LLM endpoint of c for one short chat completion,
// once, without retries: a run that would send llm_bk's every decision to
// an endpoint that cannot answer fails here instead, before it starts
// (during a run, a failed model call is LLM_ERROR and the episode's safe
// fallback, which would let the run finish with a plausible llm_bk row).
// It returns nil when a completion came back, whatever it says; an error
// wrapping [ErrEndpoint] when none did, [ErrInvalidConfig] for a bad
// setting, or ctx's error. The error never contains the API key.
func CheckEndpoint(ctx context.Context, c LLMConfig) error {
	if !c.Enabled() {
		return fmt.Errorf("%w: no LLM endpoint is configured", ErrInvalidConfig)
	}
	opts := []llm.Option{llm.WithModel(c.Model), llm.WithRetries(0), llm.WithTimeout(EndpointTimeout)}
	if c.APIKey != "" {
		opts = append(opts, llm.WithAPIKey(c.APIKey))
	}
	cl, err := llm.New(c.URL, opts...)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	_, err = cl.Chat(ctx, "", "Reply with the word ready.")
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return fmt.Errorf("%w: %s (model %q): %w", ErrEndpoint, c.URL, c.Model, err)
}
