package failure_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/blackboardkernel/bk/failure"
)

// httpError is how an effect function might report a failed response.
type httpError struct{ code int }

func (e httpError) Error() string {
	return fmt.Sprintf("GET /v2/orders: %d %s", e.code, http.StatusText(e.code))
}
func (e httpError) HTTPStatus() int { return e.code }

// A provider answers 429; the orchestrator classifies the error and asks the
// router what to do, attempt after attempt.
func ExampleRemedyFor() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()

	resp, err := http.Get(srv.URL)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	err = fmt.Errorf("sync orders: %w", httpError{resp.StatusCode})

	f := failure.Classify(err)
	fmt.Println(f.Category(), f.Status())
	for attempt := 1; attempt <= 3; attempt++ {
		d := failure.RemedyFor(f, attempt, 3)
		fmt.Printf("%s/%s retry=%v wait=%v\n", d.Loop, d.Route, d.Retry, d.Backoff)
	}

	// A syntax error in generated code goes back to the worker that wrote
	// it; a 405 goes to research first.
	for _, err := range []error{
		failure.New(failure.StatusSyntax, "line 12: unexpected indent"),
		httpError{http.StatusMethodNotAllowed},
	} {
		d := failure.RemedyFor(failure.Classify(err), 1, 3)
		fmt.Println(d.Reason)
	}
	// Output:
	// rate_limit FAILED_RATE_LIMITED
	// kernel/backoff retry=true wait=1s
	// kernel/backoff retry=true wait=2s
	// kernel/abort retry=false wait=0s
	// code_syntax (FAILED_SYNTAX): the worker corrects its output with the error in hand, then attempt 2 of 3
	// endpoint_unknown (FAILED_ENDPOINT_UNKNOWN): research the target first, then attempt 2 of 3
}

// A fetch that "worked": no error, HTTP 200, and half the resources failed.
func ExampleEvaluate() {
	result := map[string]any{
		"data": map[string]any{"patients": []any{
			map[string]any{"id": "p1", "name": "Ada"},
		}},
		"fetches": []any{
			map[string]any{"id": "p1", "status": 200},
			map[string]any{"id": "p2", "status": 400, "error": "missing _count"},
		},
	}
	want := failure.Expect{
		Data:        "data.patients",
		NonEmpty:    true,
		Required:    []string{"data.patients[].id", "data.patients[].name"},
		PerResource: "fetches",
	}
	err := failure.Evaluate(result, want)
	var f failure.Failure
	if errors.As(err, &f) {
		fmt.Println(f.Status())
		fmt.Println(f.Category(), "-", f.Message())
	}

	delete(result, "fetches")
	want.PerResource = ""
	result["data"] = map[string]any{"patients": []any{}}
	err = failure.Evaluate(result, want)
	fmt.Println(failure.Classify(err).Status())
	// Output:
	// FAILED_INCOMPLETE_FETCH
	// endpoint_unknown - 1 of 2 resources failed: p2 (missing _count); the call works for some resources and not for others
	// FAILED_SILENT_PARTIAL_FETCH
}

// A worker holds a grant of five turns; it may fix its own syntax error, but
// an expired token ends the grant at once.
func ExampleGrant() {
	l := failure.NewGrant(5)
	l.Turn("write", nil)
	l.Turn("test", failure.New(failure.StatusSyntax, "line 12"))
	l.Turn("fix", nil)
	cont, reason := l.Turn("test", httpError{http.StatusUnauthorized})
	fmt.Println(cont, reason)
	fmt.Println(l)
	f, _ := l.LastFailure()
	fmt.Println(failure.RemedyFor(f, 1, 3).Route)
	// Output:
	// false auth_error is a state failure the worker cannot repair: return to the kernel
	// T1(write) ✓ → T2(test) × code_syntax → T3(fix) ✓ → T4(test) × auth_error → YIELD
	// reauth
}
