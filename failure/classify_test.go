package failure_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/failure"
	"github.com/blackboardkernel/bk/worker/llm"
)

// statusError is a test-local HTTP error that reports its status.
type statusError struct {
	code int
	body string
}

func (e *statusError) Error() string   { return fmt.Sprintf("HTTP %d: %s", e.code, e.body) }
func (e *statusError) HTTPStatus() int { return e.code }

// fakeProvider answers /status/<code> with that status and /hang not at
// all (until the client goes away, or the test ends).
func fakeProvider(t *testing.T) *httptest.Server {
	t.Helper()
	done := make(chan struct{})
	hang := func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // so the server watches the connection
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/status/{code}", func(w http.ResponseWriter, r *http.Request) {
		code, err := strconv.Atoi(r.PathValue("code"))
		if err != nil {
			http.Error(w, "bad code", http.StatusTeapot)
			return
		}
		http.Error(w, http.StatusText(code), code)
	})
	mux.HandleFunc("/hang", hang)
	// The LLM client posts to <base>/v1/chat/completions; /llm/<code>/
	// is a base URL whose endpoint answers <code>.
	mux.HandleFunc("/llm/{code}/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(r.PathValue("code"))
		if code == http.StatusOK {
			_, _ = io.WriteString(w, `{"choices": [`) // a cut-off body
			return
		}
		http.Error(w, `{"error": "`+http.StatusText(code)+`"}`, code)
	})
	mux.HandleFunc("/llmhang/v1/chat/completions", hang)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(done) }) // runs first: releases any handler still hanging
	return srv
}

// get fetches url and turns a non-2xx answer into a *statusError, the way
// an effect function reports HTTP failures.
func get(c *http.Client, url string) error {
	resp, err := c.Get(url)
	if err != nil {
		return fmt.Errorf("fetch: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 400 {
		return fmt.Errorf("fetch: %w", &statusError{code: resp.StatusCode, body: strings.TrimSpace(string(body))})
	}
	return nil
}

func TestClassifyHTTPFromFakeServer(t *testing.T) {
	srv := fakeProvider(t)
	c := srv.Client()
	for _, tc := range []struct {
		code     int
		status   failure.ExecStatus
		category failure.Category
	}{
		{400, "FAILED_FORMAT", "format_error"},
		{401, "FAILED_AUTH_EXPIRED", "auth_error"},
		{403, "FAILED_AUTH_DENIED", "auth_error"},
		{404, "FAILED_NOT_FOUND", "not_found"},
		{405, "FAILED_ENDPOINT_UNKNOWN", "endpoint_unknown"},
		{409, "FAILED_DUPLICATE", "duplicate"},
		{422, "FAILED_FORMAT", "format_error"},
		{429, "FAILED_RATE_LIMITED", "rate_limit"},
		{500, "FAILED_PROVIDER_DOWN", "provider_down"},
		{502, "FAILED_NETWORK", "network"},
		{503, "FAILED_PROVIDER_DOWN", "provider_down"},
		{504, "FAILED_TIMEOUT", "network"},
	} {
		err := get(c, srv.URL+"/status/"+strconv.Itoa(tc.code))
		if err == nil {
			t.Fatalf("%d: no error", tc.code)
		}
		f := failure.Classify(err)
		if f.Status() != tc.status || f.Category() != tc.category || f.Legacy() {
			t.Errorf("%d: got %s/%s legacy=%v, want %s/%s", tc.code, f.Status(), f.Category(), f.Legacy(), tc.status, tc.category)
		}
		var se *statusError
		if !errors.As(f, &se) || se.code != tc.code {
			t.Errorf("%d: the cause is not reachable through the failure", tc.code)
		}
		if got := failure.FromHTTPStatus(tc.code); got != tc.category {
			t.Errorf("FromHTTPStatus(%d) = %s", tc.code, got)
		}
	}
}

func TestClassifyTimeoutFromFakeServer(t *testing.T) {
	srv := fakeProvider(t)
	c := srv.Client()
	c.Timeout = 50 * time.Millisecond // the handler never answers
	err := get(c, srv.URL+"/hang")
	f := failure.Classify(err)
	if f.Status() != failure.StatusTimeout || f.Category() != failure.Network || f.Legacy() {
		t.Fatalf("timeout %v: got %s/%s legacy=%v", err, f.Status(), f.Category(), f.Legacy())
	}
}

func TestClassifyConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nobody listens here now
	err = get(&http.Client{}, "http://"+addr+"/")
	if err == nil {
		t.Skip("something else took the port")
	}
	f := failure.Classify(err)
	if f.Status() != failure.StatusNetwork || f.Category() != failure.Network || f.Legacy() {
		t.Fatalf("%v: got %s/%s legacy=%v", err, f.Status(), f.Category(), f.Legacy())
	}
	if !errors.Is(f, syscall.ECONNREFUSED) {
		t.Error("ECONNREFUSED is not reachable through the failure")
	}
}

// The LLM client's endpoint error reports its status through
// HTTPStatus, so its HTTP failures are typed by the status, exactly; a 2xx
// answer that is not a chat completion has no failing status and is read
// by the legacy matcher; its timeouts are typed by the deadline it wraps.
func TestClassifyLLMClientErrors(t *testing.T) {
	srv := fakeProvider(t)
	for _, tc := range []struct {
		code     int
		category failure.Category
	}{
		{401, failure.AuthError},
		{403, failure.AuthError},
		{404, failure.NotFound},
		{405, failure.EndpointUnknown},
		{422, failure.FormatError},
		{429, failure.RateLimit},
		{500, failure.ProviderDown},
		{503, failure.ProviderDown},
		{200, failure.FormatError}, // a 200 whose body is not a chat completion
	} {
		c, err := llm.New(srv.URL+"/llm/"+strconv.Itoa(tc.code), llm.WithRetries(0), llm.WithHTTPClient(srv.Client()))
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Chat(context.Background(), "", "hi")
		var ee interface{ HTTPStatus() int }
		if !errors.As(err, &ee) || !errors.Is(err, llm.ErrEndpoint) {
			t.Fatalf("%d: %v is no endpoint error with a status", tc.code, err)
		}
		f := failure.Classify(err)
		if f.Category() != tc.category || f.Legacy() != (tc.code < 400) {
			t.Errorf("%d: %v: got %s (%s) legacy=%v, want %s", tc.code, err, f.Category(), f.Status(), f.Legacy(), tc.category)
		}
	}

	c, err := llm.New(srv.URL+"/llmhang", llm.WithRetries(0), llm.WithTimeout(50*time.Millisecond), llm.WithHTTPClient(srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Chat(context.Background(), "", "hi")
	if f := failure.Classify(err); f.Status() != failure.StatusTimeout || f.Legacy() {
		t.Errorf("llm timeout %v: got %s legacy=%v", err, f.Status(), f.Legacy())
	}
}

func TestClassifyGoErrors(t *testing.T) {
	var syntaxErr, typeErr error
	{
		var v map[string]any
		syntaxErr = json.Unmarshal([]byte(`{"a":`), &v)
		var n struct{ A int }
		typeErr = json.Unmarshal([]byte(`{"A":"x"}`), &n)
	}
	for _, tc := range []struct {
		name   string
		err    error
		status failure.ExecStatus
		legacy bool
	}{
		{"deadline", fmt.Errorf("call: %w", context.DeadlineExceeded), failure.StatusTimeout, false},
		{"os deadline", fmt.Errorf("read: %w", os.ErrDeadlineExceeded), failure.StatusTimeout, false},
		{"cancelled", context.Canceled, failure.StatusUnknown, false},
		{"refused", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, failure.StatusNetwork, false},
		{"reset", fmt.Errorf("read: %w", syscall.ECONNRESET), failure.StatusNetwork, false},
		{"dns", &net.DNSError{Err: "no such host", Name: "nowhere.invalid", IsNotFound: true}, failure.StatusNetwork, false},
		{"unexpected eof", fmt.Errorf("body: %w", io.ErrUnexpectedEOF), failure.StatusNetwork, false},
		{"json syntax", fmt.Errorf("decode: %w", syntaxErr), failure.StatusFormat, false},
		{"json type", typeErr, failure.StatusFormat, false},
		{"http 2xx status", &statusError{code: 200, body: "rate limit reached"}, failure.StatusRateLimited, true},
		{"legacy syntax", errors.New(`SyntaxError: invalid syntax (line 12)`), failure.StatusSyntax, true},
		{"legacy rate", errors.New("upstream said: rate limit exceeded"), failure.StatusRateLimited, true},
		{"legacy nothing", errors.New("the moon is in the wrong phase"), failure.StatusUnknown, true},
	} {
		f := failure.Classify(tc.err)
		if f.Status() != tc.status || f.Legacy() != tc.legacy {
			t.Errorf("%s: got %s legacy=%v, want %s legacy=%v", tc.name, f.Status(), f.Legacy(), tc.status, tc.legacy)
		}
		if !errors.Is(f, tc.err) {
			t.Errorf("%s: the cause is not reachable through the failure", tc.name)
		}
		if f.Message() != tc.err.Error() {
			t.Errorf("%s: message %q", tc.name, f.Message())
		}
	}
	if f := failure.Classify(context.Canceled); f.Retryable() {
		t.Error("a cancelled call is retryable")
	}
	if f := failure.Classify(nil); !f.IsZero() {
		t.Errorf("Classify(nil) = %v", f)
	}
}

func TestClassifyPassesFailuresThrough(t *testing.T) {
	orig := failure.New(failure.StatusAuthExpired, "token expired at 12:00").WithRetryable(false)
	for name, err := range map[string]error{
		"value":           orig,
		"wrapped value":   fmt.Errorf("step 3: %w", orig),
		"pointer":         &orig,
		"wrapped pointer": fmt.Errorf("step 3: %w", &orig),
		"joined":          errors.Join(errors.New("other"), orig),
	} {
		f := failure.Classify(err)
		if f.Status() != orig.Status() || f.Category() != orig.Category() || f.Message() != orig.Message() || f.Retryable() {
			t.Errorf("%s: got %v retryable=%v", name, f, f.Retryable())
		}
	}
	// An HTTP status beneath a typed failure does not override it.
	typed := failure.New(failure.StatusSchemaIncomplete, "no id").WithCause(&statusError{code: 500})
	if f := failure.Classify(fmt.Errorf("x: %w", typed)); f.Status() != failure.StatusSchemaIncomplete {
		t.Errorf("typed failure overridden: %s", f.Status())
	}
}

func TestStatusForHTTP(t *testing.T) {
	want := map[int]failure.ExecStatus{
		100: "FAILED_UNKNOWN", 200: "FAILED_UNKNOWN", 302: "FAILED_UNKNOWN",
		400: "FAILED_FORMAT", 401: "FAILED_AUTH_EXPIRED", 402: "FAILED_UNKNOWN", 403: "FAILED_AUTH_DENIED",
		404: "FAILED_NOT_FOUND", 405: "FAILED_ENDPOINT_UNKNOWN", 407: "FAILED_AUTH_EXPIRED", 408: "FAILED_TIMEOUT",
		409: "FAILED_DUPLICATE", 410: "FAILED_NOT_FOUND", 413: "FAILED_FORMAT", 415: "FAILED_FORMAT",
		418: "FAILED_UNKNOWN", 422: "FAILED_FORMAT", 429: "FAILED_RATE_LIMITED",
		500: "FAILED_PROVIDER_DOWN", 501: "FAILED_ENDPOINT_UNKNOWN", 502: "FAILED_NETWORK",
		503: "FAILED_PROVIDER_DOWN", 504: "FAILED_TIMEOUT", 507: "FAILED_PROVIDER_DOWN", 599: "FAILED_PROVIDER_DOWN",
		600: "FAILED_UNKNOWN", 0: "FAILED_UNKNOWN", -1: "FAILED_UNKNOWN",
	}
	for code, s := range want {
		if got := failure.StatusForHTTP(code); got != s {
			t.Errorf("StatusForHTTP(%d) = %s, want %s", code, got, s)
		}
	}
}
