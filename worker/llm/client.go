package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/blackboardkernel/bk/internal/chatwire"
	"github.com/blackboardkernel/bk/internal/wait"
	"github.com/blackboardkernel/bk/toolgate"
)

// Client defaults.
const (
	defaultTimeout     = 120 * time.Second // per request
	defaultRetries     = 3                 // retries after the first attempt
	defaultConcurrency = 4                 // requests in flight per Client
	defaultBackoff     = 500 * time.Millisecond
	defaultMaxBackoff  = 30 * time.Second
)

// maxResponseBytes bounds how much of a response body is read.
const maxResponseBytes = 4 << 20

// The chat completions format's messages and tool calls (one definition,
// shared with the module's scripted model servers).
type (
	message      = chatwire.Message
	toolCall     = chatwire.ToolCall
	functionCall = chatwire.FunctionCall
)

// Usage is token usage as a server reports it, and, summed, over the
// model calls of an [Agent]'s run ([AgentResult.Usage]).
type Usage struct {
	// PromptTokens and CompletionTokens are the tokens of the requests and
	// of the answers; TotalTokens is their total as the server reported it
	// (their sum when it left it out).
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// ModelCalls is how many completions the usage covers: 1 for one model
	// call, the number of model calls for an [Agent]'s run. Failed
	// requests are not counted.
	ModelCalls int `json:"model_calls"`
}

// add returns the sum of u and v, each count saturating at the largest
// int (and at the smallest, for a server that reports negative counts):
// usage a hostile server reports must never wrap a total into looking small.
func (u Usage) add(v Usage) Usage {
	return Usage{
		PromptTokens:     satAdd(u.PromptTokens, v.PromptTokens),
		CompletionTokens: satAdd(u.CompletionTokens, v.CompletionTokens),
		TotalTokens:      satAdd(u.TotalTokens, v.TotalTokens),
		ModelCalls:       satAdd(u.ModelCalls, v.ModelCalls),
	}
}

// satAdd is a + b, held at the int range's ends instead of wrapping.
func satAdd(a, b int) int {
	s := a + b
	switch {
	case !usageSaturates():
	case a > 0 && b > 0 && s < 0:
		return math.MaxInt
	case a < 0 && b < 0 && s >= 0:
		return math.MinInt
	}
	return s
}

// completion is the first choice of a chat completion.
type completion struct {
	// Content is the assistant's text; "" when it only calls tools.
	Content string
	// ToolCalls are the tool calls the model made, in its order. Each has
	// Type "function"; its ID is as the server sent it, possibly "".
	ToolCalls []toolCall
	// FinishReason is the server's finish_reason: "stop", "tool_calls",
	// "length", ... ("" when it sent none).
	FinishReason string
	// Usage is the token usage the server reported (zero counts when it
	// reported none; TotalTokens is the sum of the other two when the
	// server left it out), with ModelCalls 1.
	Usage Usage
}

// Client talks to an OpenAI-compatible chat completions endpoint:
// POST {base}/v1/chat/completions. Build it with [New], and hand it to
// [NewAgent] or [NewWorker]; [Client.Chat] asks it one question directly.
//
// A Client is safe for concurrent use. All its calls share one semaphore,
// so at most the configured number of requests ([WithConcurrency]) are in
// flight at once; a call waiting for a slot gives up when its context ends.
type Client struct {
	endpoint    string
	redacted    string // endpoint without a URL password, for String
	model       string
	apiKey      string
	temperature float64
	maxTokens   int
	effort      string
	timeout     time.Duration
	retries     int
	backoff     time.Duration
	maxBackoff  time.Duration
	concurrency int
	sem         chan struct{}
	hc          *http.Client
	log         *slog.Logger
	sleep       func(context.Context, time.Duration) error
	jitter      func() float64
}

// Option configures a [Client] in [New].
type Option func(*Client)

// WithModel sets the model name sent with every request. Default: "" (a
// llama.cpp server serving one model accepts that; vLLM, Ollama and hosted
// APIs need the served model's name).
func WithModel(name string) Option { return func(c *Client) { c.model = name } }

// WithAPIKey sets the key sent as "Authorization: Bearer <key>". Default:
// none, and no Authorization header. The key is never logged and never part
// of an error message. (The bench harness and the examples read it from
// BK_LLM_API_KEY.)
func WithAPIKey(key string) Option { return func(c *Client) { c.apiKey = key } }

// WithTemperature sets the sampling temperature, in [0, 2] (default 0).
func WithTemperature(t float64) Option { return func(c *Client) { c.temperature = t } }

// WithMaxTokens caps the answer's length in tokens. Default 0: the field is
// omitted and the server's limit applies. Reasoning models need room for
// their <think> block.
func WithMaxTokens(n int) Option { return func(c *Client) { c.maxTokens = n } }

// WithReasoningEffort sets reasoning_effort ("low", "medium", "high", or
// whatever the server accepts). Default "": the field is omitted.
func WithReasoningEffort(effort string) Option { return func(c *Client) { c.effort = effort } }

// WithTimeout bounds each request, including reading its response (default
// 120 s; 0 means no limit besides the caller's context). A
// request cut by it counts as a network error and is retried.
func WithTimeout(d time.Duration) Option { return func(c *Client) { c.timeout = d } }

// WithRetries sets how many times a failed request is retried (default
// 3; 0 means one attempt only). Only 429, 5xx, network
// errors and timeouts are retried.
func WithRetries(n int) Option { return func(c *Client) { c.retries = n } }

// WithBackoff sets the first retry delay and the bound on every delay
// (defaults 500 ms, 30 s). The n-th retry waits
// about base·2^(n-1), capped at max, with jitter: a uniform draw between
// half of it and all of it. A Retry-After header, in seconds or as an HTTP
// date, replaces that delay, still capped at max.
func WithBackoff(base, max time.Duration) Option {
	return func(c *Client) { c.backoff, c.maxBackoff = base, max }
}

// WithConcurrency bounds the requests this Client has in flight at once
// (default 4; at least 1).
func WithConcurrency(n int) Option { return func(c *Client) { c.concurrency = n } }

// WithHTTPClient sets the HTTP client. Default: a fresh [http.Client] on
// [http.DefaultTransport]. The per-request timeout is applied through the
// request context, not through the client's Timeout.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithLogger sets the logger: debug for each request, warning for each
// retry. Default: none. Nothing logged contains the API key or the
// messages.
func WithLogger(l *slog.Logger) Option { return func(c *Client) { c.log = l } }

// withSleep replaces how the client waits between retries. sleep must return
// early with the context's error when ctx ends. Tests use it to retry
// without waiting.
func withSleep(sleep func(ctx context.Context, d time.Duration) error) Option {
	return func(c *Client) { c.sleep = sleep }
}

// withJitter replaces the source of jitter (tests): a function returning a
// uniform number in [0, 1). It is called concurrently and must be safe for
// that.
func withJitter(rand func() float64) Option { return func(c *Client) { c.jitter = rand } }

// New returns a Client for the server at baseURL: "http://host:port" or the
// same with a path prefix. A trailing "/v1" is accepted too, so
// "http://localhost:11434/v1" and "http://localhost:11434" both post to
// "http://localhost:11434/v1/chat/completions".
//
// It returns an error wrapping [ErrInvalidConfig] for an empty or
// unparsable base URL, a scheme other than http or https, a missing host, a
// nil option, a negative retry count, timeout or max tokens, a temperature
// outside [0, 2], a concurrency below 1, a base backoff not positive or
// above the max, or a nil HTTP client, logger, sleep or jitter function.
func New(baseURL string, opts ...Option) (*Client, error) {
	endpoint, err := endpointURL(baseURL)
	if err != nil {
		return nil, err
	}
	c := &Client{
		endpoint:    endpoint.String(),
		redacted:    endpoint.Redacted(),
		timeout:     defaultTimeout,
		retries:     defaultRetries,
		backoff:     defaultBackoff,
		maxBackoff:  defaultMaxBackoff,
		concurrency: defaultConcurrency,
		hc:          &http.Client{},
		log:         slog.New(slog.DiscardHandler),
		sleep:       wait.Sleep,
		jitter:      rand.Float64,
	}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: nil option", ErrInvalidConfig)
		}
		o(c)
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	c.sem = make(chan struct{}, c.concurrency)
	return c, nil
}

func endpointURL(base string) (*url.URL, error) {
	if strings.TrimSpace(base) == "" {
		return nil, fmt.Errorf("%w: empty base URL", ErrInvalidConfig)
	}
	u, err := url.Parse(base)
	if err != nil {
		// The parser's message quotes the URL, which may hold credentials.
		return nil, fmt.Errorf("%w: base URL does not parse", ErrInvalidConfig)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%w: base URL scheme %q is not http or https", ErrInvalidConfig, u.Scheme)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("%w: base URL has no host", ErrInvalidConfig)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%w: base URL has a query or fragment", ErrInvalidConfig)
	}
	path := strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/v1")
	u.Path, u.RawPath = path+"/v1/chat/completions", ""
	return u, nil
}

func (c *Client) check() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, a...)...)
	}
	switch {
	case c.retries < 0:
		return bad("negative retries %d", c.retries)
	case c.timeout < 0:
		return bad("negative timeout %v", c.timeout)
	case c.maxTokens < 0:
		return bad("negative max tokens %d", c.maxTokens)
	case math.IsNaN(c.temperature) || c.temperature < 0 || c.temperature > 2:
		return bad("temperature %v outside [0, 2]", c.temperature)
	case c.concurrency < 1:
		return bad("concurrency %d below 1", c.concurrency)
	case c.backoff <= 0 || c.maxBackoff < c.backoff:
		return bad("backoff %v with max %v", c.backoff, c.maxBackoff)
	case c.hc == nil:
		return bad("nil HTTP client")
	case c.log == nil:
		return bad("nil logger")
	case c.sleep == nil:
		return bad("nil sleep function")
	case c.jitter == nil:
		return bad("nil jitter function")
	}
	return nil
}

// String describes the client without its API key or a URL password.
func (c *Client) String() string {
	return fmt.Sprintf("llm.Client{endpoint: %s, model: %q}", c.redacted, c.model)
}

// GoString is String, so that %#v does not print the API key either.
func (c *Client) GoString() string { return c.String() }

type chatRequest struct {
	Model           string     `json:"model"`
	Messages        []message  `json:"messages"`
	Tools           []wireTool `json:"tools,omitempty"`
	ToolChoice      string     `json:"tool_choice,omitempty"`
	Temperature     float64    `json:"temperature"`
	MaxTokens       int        `json:"max_tokens,omitempty"`
	ReasoningEffort string     `json:"reasoning_effort,omitempty"`
}

// wireTool is a tool in a request: {"type": "function", "function": {...}}.
type wireTool struct {
	Type     string        `json:"type"`
	Function toolgate.Spec `json:"function"`
}

// emptyParameters is the schema sent for a tool that declares none: an
// object with no properties. Some servers refuse a function without one.
var emptyParameters = json.RawMessage(`{"type":"object","properties":{}}`)

// wireTools renders the tools of a request. A tool without a name, a name
// given twice or parameters that are not a JSON object are
// [ErrInvalidConfig].
func wireTools(specs []toolgate.Spec) ([]wireTool, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	out := make([]wireTool, 0, len(specs))
	seen := make(map[string]bool, len(specs))
	for i, s := range specs {
		switch {
		case s.Name == "":
			return nil, fmt.Errorf("%w: tool %d has no name", ErrInvalidConfig, i)
		case seen[s.Name]:
			return nil, fmt.Errorf("%w: tool %q given twice", ErrInvalidConfig, s.Name)
		}
		seen[s.Name] = true
		params := bytes.TrimSpace(s.Parameters)
		if len(params) == 0 {
			params = emptyParameters
		} else if params[0] != '{' || !json.Valid(params) {
			return nil, fmt.Errorf("%w: tool %q: parameters are not a JSON object", ErrInvalidConfig, s.Name)
		}
		s.Parameters = params
		out = append(out, wireTool{Type: "function", Function: s})
	}
	return out, nil
}

type chatResponse struct {
	Choices []struct {
		Message struct {
			Content   string     `json:"content"`
			ToolCalls []toolCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
}

// first reads the first choice and the usage.
func (cr *chatResponse) first() completion {
	ch := cr.Choices[0]
	out := completion{
		Content:      ch.Message.Content,
		ToolCalls:    ch.Message.ToolCalls,
		FinishReason: ch.FinishReason,
		Usage: Usage{
			PromptTokens:     cr.Usage.PromptTokens,
			CompletionTokens: cr.Usage.CompletionTokens,
			TotalTokens:      cr.Usage.TotalTokens,
			ModelCalls:       1,
		},
	}
	if out.Usage.TotalTokens == 0 {
		out.Usage.TotalTokens = satAdd(out.Usage.PromptTokens, out.Usage.CompletionTokens)
	}
	for i := range out.ToolCalls {
		if out.ToolCalls[i].Type == "" {
			out.ToolCalls[i].Type = "function"
		}
	}
	return out
}

// attemptFailure is one failed attempt.
type attemptFailure struct {
	status int           // 0: no response
	wait   time.Duration // Retry-After; < 0 when absent
	err    error
}

func (f *attemptFailure) retryable() bool {
	return f.status == 0 || f.status == http.StatusTooManyRequests || f.status >= 500
}

// Chat sends a system prompt ("" sends none) and a user message, and
// returns the content of the first choice: the request a [Worker] makes
// for each question (an [Agent]'s rounds carry tools and the conversation
// too, with the same retries and errors).
//
// 429, 5xx, network errors and request timeouts are retried with backoff
// ([WithRetries], [WithBackoff]); other statuses and a 2xx body that is not
// a chat completion fail at once. A failure wraps [ErrEndpoint] and
// reports the last status (an HTTPStatus() int method in its chain). When ctx ends first, Chat returns an error wrapping the
// context's error (and not [ErrEndpoint]).
func (c *Client) Chat(ctx context.Context, system, user string) (string, error) {
	var msgs []message
	if system != "" {
		msgs = append(msgs, message{Role: "system", Content: system})
	}
	out, err := c.complete(ctx, append(msgs, message{Role: "user", Content: user}), nil)
	if err != nil {
		return "", err
	}
	return out.Content, nil
}

// complete sends the messages with the tools the model may call, and
// returns the first choice: its text, its tool calls, its finish reason and
// the token usage. With tools, the request carries them as function tools
// and tool_choice "auto"; without, it has neither field. Messages may hold
// earlier assistant tool calls and "tool" results.
//
// Retries, the timeout, the concurrency bound and the errors are those of
// [Client.Chat]. A tool without a name, a name given twice, or parameters
// that are not a JSON object fail before any request, with an error
// wrapping [ErrInvalidConfig].
func (c *Client) complete(ctx context.Context, msgs []message, tools []toolgate.Spec) (completion, error) {
	wt, err := wireTools(tools)
	if err != nil {
		return completion{}, err
	}
	req := chatRequest{
		Model:           c.model,
		Messages:        msgs,
		Tools:           wt,
		Temperature:     c.temperature,
		MaxTokens:       c.maxTokens,
		ReasoningEffort: c.effort,
	}
	if len(wt) > 0 {
		req.ToolChoice = "auto"
	}
	body, err := json.Marshal(req)
	if err != nil { // strings, finite numbers and checked JSON: cannot happen
		return completion{}, fmt.Errorf("llm: encoding request: %w", err)
	}
	for attempt := 1; ; attempt++ {
		out, f := c.attempt(ctx, body)
		if f == nil {
			return out, nil
		}
		if ctx.Err() != nil {
			return completion{}, fmt.Errorf("llm: chat stopped after %d attempt(s): %w", attempt, ctx.Err())
		}
		if !f.retryable() || attempt > c.retries {
			return completion{}, &endpointError{status: f.status, attempts: attempt, err: f.err}
		}
		d := c.delay(attempt, f.wait)
		c.log.WarnContext(ctx, "llm: retrying", "attempt", attempt, "status", f.status, "wait", d, "error", f.err.Error())
		if err := c.sleep(ctx, d); err != nil {
			return completion{}, fmt.Errorf("llm: chat stopped after %d attempt(s): %w", attempt, err)
		}
	}
}

// attempt makes one request, holding a concurrency slot while it does.
func (c *Client) attempt(ctx context.Context, body []byte) (completion, *attemptFailure) {
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return completion{}, &attemptFailure{wait: -1, err: ctx.Err()}
	}
	defer func() { <-c.sem }()
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return completion{}, &attemptFailure{wait: -1, err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.log.DebugContext(ctx, "llm: request failed", "error", err.Error())
		return completion{}, &attemptFailure{wait: -1, err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return completion{}, &attemptFailure{wait: -1, err: fmt.Errorf("reading response: %w", err)}
	}
	c.log.DebugContext(ctx, "llm: response", "status", resp.StatusCode, "bytes", len(data))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return completion{}, &attemptFailure{
			status: resp.StatusCode,
			wait:   retryAfter(resp.Header.Get("Retry-After")),
			err:    fmt.Errorf("HTTP %d: %s", resp.StatusCode, c.excerpt(data)),
		}
	}
	bad := func(format string, a ...any) (completion, *attemptFailure) {
		return completion{}, &attemptFailure{status: resp.StatusCode, wait: -1, err: fmt.Errorf(format, a...)}
	}
	if len(data) > maxResponseBytes {
		return bad("response larger than %d bytes", maxResponseBytes)
	}
	var cr chatResponse
	if err := json.Unmarshal(data, &cr); err != nil {
		return bad("not a chat completion (%v): %s", err, c.excerpt(data))
	}
	if len(cr.Choices) == 0 {
		return bad("chat completion without choices: %s", c.excerpt(data))
	}
	return cr.first(), nil
}

// delay is the wait before retry number attempt (from 1).
func (c *Client) delay(attempt int, retryAfter time.Duration) time.Duration {
	if retryAfter >= 0 {
		return min(retryAfter, c.maxBackoff)
	}
	d := c.backoff
	for i := 1; i < attempt && d < c.maxBackoff; i++ {
		d *= 2
	}
	d = min(d, c.maxBackoff)
	j := min(max(c.jitter(), 0), 1)
	return d/2 + time.Duration(j*float64(d/2))
}

// retryAfter parses a Retry-After value: delay seconds or an HTTP date. It
// returns -1 when the header is absent or unreadable.
func retryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return -1
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s < 0 {
			return -1
		}
		if s > int64(math.MaxInt64/time.Second) {
			return math.MaxInt64
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return -1
}

// excerpt renders the start of a response body for an error message, with
// the API key blanked out in case the server echoes it.
func (c *Client) excerpt(data []byte) string {
	s := string(data)
	if c.apiKey != "" {
		s = strings.ReplaceAll(s, c.apiKey, "[redacted]")
	}
	return strings.ToValidUTF8(clip(strings.TrimSpace(s), 256), "\uFFFD")
}

// usageSaturates reports whether summed usage saturates instead of
// wrapping (off only under its mutation switch).
func usageSaturates() bool {
	return !mutUsageSaturate
}

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
