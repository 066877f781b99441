package llm_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/worker/llm"
)

var hello = []llm.Message{{Role: "user", Content: "hello"}}

func TestNewRejectsBadConfig(t *testing.T) {
	const ok = "http://localhost:8000"
	cases := []struct {
		name string
		base string
		opts []llm.Option
	}{
		{"empty base URL", "", nil},
		{"blank base URL", "  ", nil},
		{"no scheme", "localhost:8000", nil},
		{"ftp scheme", "ftp://localhost:8000", nil},
		{"no host", "http://", nil},
		{"unparsable", "http://[::1", nil},
		{"query", "http://localhost:8000/?x=1", nil},
		{"nil option", ok, []llm.Option{nil}},
		{"negative retries", ok, []llm.Option{llm.WithRetries(-1)}},
		{"negative timeout", ok, []llm.Option{llm.WithTimeout(-time.Second)}},
		{"negative max tokens", ok, []llm.Option{llm.WithMaxTokens(-1)}},
		{"negative temperature", ok, []llm.Option{llm.WithTemperature(-0.1)}},
		{"temperature above 2", ok, []llm.Option{llm.WithTemperature(2.5)}},
		{"NaN temperature", ok, []llm.Option{llm.WithTemperature(math.NaN())}},
		{"zero concurrency", ok, []llm.Option{llm.WithConcurrency(0)}},
		{"zero backoff", ok, []llm.Option{llm.WithBackoff(0, time.Second)}},
		{"max below base", ok, []llm.Option{llm.WithBackoff(time.Second, time.Millisecond)}},
		{"nil HTTP client", ok, []llm.Option{llm.WithHTTPClient(nil)}},
		{"nil logger", ok, []llm.Option{llm.WithLogger(nil)}},
		{"nil sleep", ok, []llm.Option{llm.WithSleep(nil)}},
		{"nil jitter", ok, []llm.Option{llm.WithJitter(nil)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := llm.New(tc.base, tc.opts...)
			if !errors.Is(err, llm.ErrInvalidConfig) {
				t.Fatalf("New(%q) = %v, %v; want an error wrapping ErrInvalidConfig", tc.base, c, err)
			}
		})
	}
	if _, err := llm.New(ok, llm.WithRetries(0), llm.WithTimeout(0), llm.WithTemperature(2)); err != nil {
		t.Fatalf("New with boundary values: %v", err)
	}
}

func TestNewKeepsURLPasswordsOut(t *testing.T) {
	_, err := llm.New("http://user:hunter2@[::1")
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error %v: want an error that does not quote the URL's password", err)
	}
	c, err := llm.New("http://user:hunter2@localhost:8000/v1")
	if err != nil {
		t.Fatal(err)
	}
	if s := c.String(); strings.Contains(s, "hunter2") || !strings.Contains(s, "localhost:8000/v1/chat/completions") {
		t.Errorf("String() = %q; want the endpoint without the password", s)
	}
}

func TestEndpointPath(t *testing.T) {
	f := newFake(t, func(int, request) reply { return answer("ok") })
	for _, suffix := range []string{"", "/", "/v1", "/v1/"} {
		c, err := llm.New(f.URL+suffix, llm.WithModel("m"))
		if err != nil {
			t.Fatalf("New(%q): %v", f.URL+suffix, err)
		}
		// The fake answers 404 to any other path.
		if got, err := c.Send(context.Background(), hello); err != nil || got != "ok" {
			t.Errorf("base %q: Chat = %q, %v; want the request at /v1/chat/completions", f.URL+suffix, got, err)
		}
	}
	c, err := llm.New(f.URL + "/proxy")
	if err != nil {
		t.Fatal(err)
	}
	var ee *llm.EndpointError
	if _, err := c.Send(context.Background(), hello); !errors.As(err, &ee) || ee.Status() != http.StatusNotFound {
		t.Errorf("base with a prefix: err = %v; want a 404 from /proxy/v1/chat/completions", err)
	}
}

func TestRequestWireFormat(t *testing.T) {
	f := newFake(t, func(int, request) reply { return answer("fine") })
	with := client(t, f, nil, llm.WithAPIKey("sk-test-123"), llm.WithTemperature(0.7),
		llm.WithMaxTokens(256), llm.WithReasoningEffort("low"))
	without := client(t, f, nil)
	msgs := []llm.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hi"}}
	for _, c := range []*llm.Client{with, without} {
		got, err := c.Send(context.Background(), msgs)
		if err != nil || got != "fine" {
			t.Fatalf("Chat = %q, %v; want %q", got, err, "fine")
		}
	}
	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("server saw %d requests, want 2", len(reqs))
	}
	full, bare := reqs[0], reqs[1]
	if h := full.Header.Get("Authorization"); h != "Bearer sk-test-123" {
		t.Errorf("Authorization = %q, want the bearer key", h)
	}
	if h := bare.Header.Get("Authorization"); h != "" {
		t.Errorf("Authorization without a key = %q, want none", h)
	}
	if ct := full.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	if full.Body.Model != "test-model" || !reflect.DeepEqual(full.Body.Messages, msgs) {
		t.Errorf("model %q messages %v; want test-model and the messages sent", full.Body.Model, full.Body.Messages)
	}
	if full.Raw["temperature"] != 0.7 || full.Raw["max_tokens"] != 256.0 || full.Raw["reasoning_effort"] != "low" {
		t.Errorf("request body %v: want temperature 0.7, max_tokens 256, reasoning_effort low", full.Raw)
	}
	if bare.Raw["temperature"] != 0.0 {
		t.Errorf("temperature %v: want 0 sent explicitly", bare.Raw["temperature"])
	}
	for _, key := range []string{"reasoning_effort", "max_tokens", "tools", "tool_choice"} {
		if _, present := bare.Raw[key]; present {
			t.Errorf("request body %v: %s present although not set", bare.Raw, key)
		}
	}
}

func TestRetry429ThenSuccess(t *testing.T) {
	f := newFake(t, func(n int, _ request) reply {
		if n == 0 {
			return reply{status: http.StatusTooManyRequests, header: map[string]string{"Retry-After": "1"},
				body: `{"error":{"message":"rate limited"}}`}
		}
		return answer("done")
	})
	s := &sleeper{}
	got, err := client(t, f, s).Send(context.Background(), hello)
	if err != nil || got != "done" {
		t.Fatalf("Chat = %q, %v; want %q after one retry", got, err, "done")
	}
	if n := len(f.requests()); n != 2 {
		t.Errorf("server saw %d requests, want 2", n)
	}
	if w := s.got(); !slices.Equal(w, []time.Duration{time.Second}) {
		t.Errorf("waits %v, want [1s] from Retry-After", w)
	}
}

func TestRetryAfterIsBounded(t *testing.T) {
	for _, v := range []string{"3600", time.Now().Add(24 * time.Hour).UTC().Format(http.TimeFormat)} {
		f := newFake(t, func(n int, _ request) reply {
			if n == 0 {
				return reply{status: http.StatusServiceUnavailable, header: map[string]string{"Retry-After": v}}
			}
			return answer("done")
		})
		s := &sleeper{}
		if _, err := client(t, f, s).Send(context.Background(), hello); err != nil {
			t.Fatalf("Retry-After %q: %v", v, err)
		}
		if w := s.got(); !slices.Equal(w, []time.Duration{2 * time.Second}) {
			t.Errorf("Retry-After %q: waits %v, want [2s], the max backoff", v, w)
		}
	}
}

func TestServerErrorsUntilRetriesRunOut(t *testing.T) {
	f := newFake(t, func(int, request) reply {
		return reply{status: http.StatusInternalServerError, body: `{"error":{"message":"boom"}}`}
	})
	s := &sleeper{}
	_, err := client(t, f, s, llm.WithRetries(3)).Send(context.Background(), hello)
	var ee *llm.EndpointError
	if !errors.Is(err, llm.ErrEndpoint) || !errors.As(err, &ee) {
		t.Fatalf("err = %v; want an *EndpointError wrapping ErrEndpoint", err)
	}
	if ee.Status() != 500 || ee.Attempts() != 4 || !strings.Contains(err.Error(), "boom") {
		t.Errorf("err = %+v; want status 500 after 4 attempts, with the server's message", ee)
	}
	if n := len(f.requests()); n != 4 {
		t.Errorf("server saw %d requests, want 4", n)
	}
	// base 100ms doubling, capped at 2s, jitter 0.5: 3/4 of each.
	want := []time.Duration{75 * time.Millisecond, 150 * time.Millisecond, 300 * time.Millisecond}
	if w := s.got(); !slices.Equal(w, want) {
		t.Errorf("waits %v, want %v", w, want)
	}
}

func TestBackoffIsCappedAndJittered(t *testing.T) {
	f := newFake(t, func(int, request) reply { return reply{status: http.StatusBadGateway} })
	for _, tc := range []struct {
		jitter float64
		want   []time.Duration
	}{
		{0, []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, time.Second, time.Second}},
		{0.75, []time.Duration{87500 * time.Microsecond, 175 * time.Millisecond, 350 * time.Millisecond, 700 * time.Millisecond, 1400 * time.Millisecond, 1750 * time.Millisecond, 1750 * time.Millisecond}},
	} {
		s := &sleeper{}
		c := client(t, f, s, llm.WithRetries(7), llm.WithJitter(func() float64 { return tc.jitter }))
		if _, err := c.Send(context.Background(), hello); !errors.Is(err, llm.ErrEndpoint) {
			t.Fatalf("err = %v, want ErrEndpoint", err)
		}
		if w := s.got(); !slices.Equal(w, tc.want) {
			t.Errorf("jitter %v: waits %v, want %v", tc.jitter, w, tc.want)
		}
	}
}

func TestClientErrorsAreNotRetried(t *testing.T) {
	for _, status := range []int{400, 401, 404, 422} {
		f := newFake(t, func(int, request) reply {
			return reply{status: status, body: `{"error":{"message":"no"}}`}
		})
		_, err := client(t, f, nil).Send(context.Background(), hello)
		var ee *llm.EndpointError
		if !errors.As(err, &ee) || ee.Status() != status || ee.Attempts() != 1 {
			t.Errorf("HTTP %d: err = %v; want an EndpointError after one attempt", status, err)
		}
		if n := len(f.requests()); n != 1 {
			t.Errorf("HTTP %d: server saw %d requests, want 1", status, n)
		}
	}
}

func TestMalformedCompletionIsAnEndpointError(t *testing.T) {
	for _, body := range []string{`not json`, `{"choices": []}`, `{"choices": "x"}`} {
		f := newFake(t, func(int, request) reply { return reply{body: body} })
		_, err := client(t, f, nil).Send(context.Background(), hello)
		var ee *llm.EndpointError
		if !errors.As(err, &ee) || ee.Status() != 200 || ee.Attempts() != 1 {
			t.Errorf("body %q: err = %v; want an EndpointError after one attempt", body, err)
		}
	}
}

func TestNetworkErrorIsRetried(t *testing.T) {
	f := newFake(t, func(n int, _ request) reply {
		if n == 0 {
			return reply{hangup: true}
		}
		return answer("back")
	})
	s := &sleeper{}
	got, err := client(t, f, s).Send(context.Background(), hello)
	if err != nil || got != "back" {
		t.Fatalf("Chat = %q, %v; want a retry after the dropped connection", got, err)
	}
	if w := s.got(); len(w) != 1 {
		t.Errorf("waits %v, want one", w)
	}
}

func TestTimeoutCutsHangingResponse(t *testing.T) {
	f := newFake(t, func(int, request) reply { return reply{hang: true} })
	s := &sleeper{}
	c := client(t, f, s, llm.WithTimeout(20*time.Millisecond), llm.WithRetries(1))
	_, err := c.Send(context.Background(), hello)
	var ee *llm.EndpointError
	if !errors.As(err, &ee) || !errors.Is(err, context.DeadlineExceeded) || ee.Attempts() != 2 || ee.Status() != 0 {
		t.Fatalf("err = %v; want an EndpointError wrapping DeadlineExceeded after 2 attempts", err)
	}
	// Every handler the requests reached returns once the client has gone.
	// Under load a 20ms timeout can expire before a request reaches the
	// server, so count the requests it saw rather than the attempts.
	for range f.requests() {
		<-f.exited
	}
}

func TestContextCancellation(t *testing.T) {
	t.Run("during a request", func(t *testing.T) {
		f := newFake(t, func(int, request) reply { return reply{hang: true} })
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-f.entered
			cancel()
		}()
		_, err := client(t, f, nil).Send(ctx, hello)
		if !errors.Is(err, context.Canceled) || errors.Is(err, llm.ErrEndpoint) {
			t.Fatalf("err = %v; want context.Canceled and not ErrEndpoint", err)
		}
		<-f.exited
		if n := len(f.requests()); n != 1 {
			t.Errorf("server saw %d requests, want 1 (no retry after cancellation)", n)
		}
	})
	t.Run("during the backoff", func(t *testing.T) {
		f := newFake(t, func(int, request) reply { return reply{status: 503} })
		ctx, cancel := context.WithCancel(context.Background())
		sleep := func(ctx context.Context, d time.Duration) error {
			cancel()
			return ctx.Err()
		}
		_, err := client(t, f, nil, llm.WithSleep(sleep)).Send(ctx, hello)
		if !errors.Is(err, context.Canceled) || errors.Is(err, llm.ErrEndpoint) {
			t.Fatalf("err = %v; want context.Canceled", err)
		}
		if n := len(f.requests()); n != 1 {
			t.Errorf("server saw %d requests, want 1", n)
		}
	})
	t.Run("already cancelled", func(t *testing.T) {
		f := newFake(t, func(int, request) reply { return answer("x") })
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := client(t, f, nil).Send(ctx, hello); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v; want context.Canceled", err)
		}
	})
	t.Run("default sleep honours the context", func(t *testing.T) {
		f := newFake(t, func(int, request) reply { return reply{status: 503} })
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-f.entered
			cancel()
		}()
		c, err := llm.New(f.URL, llm.WithBackoff(time.Hour, time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Send(ctx, hello); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v; want context.Canceled out of an hour-long backoff", err)
		}
	})
}

func TestAPIKeyNeverLeaks(t *testing.T) {
	const key = "sk-secret-DO-NOT-LEAK"
	// A server that echoes the Authorization header in its errors.
	f := newFake(t, func(n int, req request) reply {
		status := http.StatusInternalServerError
		if n > 0 {
			status = http.StatusUnauthorized
		}
		return reply{status: status, body: fmt.Sprintf(`{"error":{"message":"bad credentials %s"}}`, req.Header.Get("Authorization"))}
	})
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := client(t, f, nil, llm.WithAPIKey(key), llm.WithLogger(log))
	_, err := c.Send(context.Background(), hello)
	if !errors.Is(err, llm.ErrEndpoint) {
		t.Fatalf("err = %v; want ErrEndpoint", err)
	}
	if got := f.requests()[0].Header.Get("Authorization"); got != "Bearer "+key {
		t.Fatalf("the key was not sent: Authorization %q", got)
	}
	if !strings.Contains(logs.String(), "retrying") {
		t.Fatalf("logs %q: want a retry logged", logs.String())
	}
	for what, s := range map[string]string{
		"error": err.Error(),
		"logs":  logs.String(),
		"%v":    fmt.Sprintf("%v", c),
		"%+v":   fmt.Sprintf("%+v", c),
		"%#v":   fmt.Sprintf("%#v", c),
		"%s":    c.String(),
	} {
		if strings.Contains(s, key) {
			t.Errorf("%s contains the API key: %s", what, s)
		}
	}
}

func TestConcurrencyIsBounded(t *testing.T) {
	const limit, waiting = 2, 4
	in, release := make(chan struct{}, limit+waiting), make(chan struct{})
	f := newFake(t, func(int, request) reply {
		in <- struct{}{}
		<-release
		return answer("ok")
	})
	c := client(t, f, nil, llm.WithConcurrency(limit))
	var wg sync.WaitGroup
	call := func(ctx context.Context, check func(error)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Send(ctx, hello)
			check(err)
		}()
	}
	for range limit {
		call(context.Background(), func(err error) {
			if err != nil {
				t.Errorf("holding call: %v", err)
			}
		})
	}
	for range limit {
		<-in
	}
	// Every slot is held: further calls wait at the semaphore, never reach
	// the server, and give up when their context ends.
	var waiters sync.WaitGroup
	for range waiting {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		waiters.Add(1)
		call(ctx, func(err error) {
			defer waiters.Done()
			defer cancel()
			if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, llm.ErrEndpoint) {
				t.Errorf("waiting call: err = %v; want its own deadline, not an endpoint failure", err)
			}
		})
	}
	waiters.Wait()
	if n := len(f.requests()); n != limit {
		t.Errorf("server saw %d requests while %d slots were held, want %d", n, limit, limit)
	}
	close(release)
	wg.Wait()
}

// A server that reports usage near the int range's end cannot wrap the
// agent's total into a small or negative count that a budget would admit.
func TestUsageAddSaturates(t *testing.T) {
	big := llm.Usage{PromptTokens: math.MaxInt - 1, CompletionTokens: 5, TotalTokens: math.MaxInt, ModelCalls: 1}
	got := big.Add(big)
	if got.PromptTokens != math.MaxInt || got.TotalTokens != math.MaxInt || got.CompletionTokens != 10 || got.ModelCalls != 2 {
		t.Errorf("got %+v", got)
	}
	neg := llm.Usage{PromptTokens: math.MinInt + 1}
	if got := neg.Add(neg); got.PromptTokens != math.MinInt {
		t.Errorf("got %+v", got)
	}
}
