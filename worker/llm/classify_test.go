package llm_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/failure"
	"github.com/blackboardkernel/bk/worker/llm"
)

var _ interface{ HTTPStatus() int } = (*llm.EndpointError)(nil) // what failure.Classify reads

// Real HTTP failures from a server, typed exactly: by the status when one
// came, by the cause when none did, never by the legacy text matcher.
func TestEndpointErrorsClassify(t *testing.T) {
	for _, tc := range []struct {
		name string
		rep  reply
		opts []llm.Option
		want failure.ExecStatus
	}{
		{"bad request", reply{status: http.StatusBadRequest, body: `{"error":"bad"}`}, nil, failure.StatusFormat},
		{"expired key", reply{status: http.StatusUnauthorized, body: `{"error":"invalid api key"}`}, nil, failure.StatusAuthExpired},
		{"no permission", reply{status: http.StatusForbidden}, nil, failure.StatusAuthDenied},
		{"no such model", reply{status: http.StatusNotFound}, nil, failure.StatusNotFound},
		{"wrong method", reply{status: http.StatusMethodNotAllowed}, nil, failure.StatusEndpointUnknown},
		{"rate limited", reply{status: http.StatusTooManyRequests}, []llm.Option{llm.WithRetries(1)}, failure.StatusRateLimited},
		{"server error", reply{status: http.StatusInternalServerError}, []llm.Option{llm.WithRetries(0)}, failure.StatusProviderDown},
		{"overloaded", reply{status: http.StatusServiceUnavailable}, []llm.Option{llm.WithRetries(0)}, failure.StatusProviderDown},
		{"bad gateway", reply{status: http.StatusBadGateway}, []llm.Option{llm.WithRetries(0)}, failure.StatusNetwork},
		{"hung up", reply{hangup: true}, []llm.Option{llm.WithRetries(0)}, failure.StatusNetwork},
		{"no answer in time", reply{hang: true}, []llm.Option{llm.WithRetries(0), llm.WithTimeout(20 * time.Millisecond)}, failure.StatusTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, func(int, request) reply { return tc.rep })
			_, err := client(t, f, nil, tc.opts...).Send(context.Background(), hello)
			var ee *llm.EndpointError
			if !errors.As(err, &ee) {
				t.Fatalf("err = %v, want an *EndpointError", err)
			}
			got := failure.Classify(err)
			if got.Status() != tc.want || got.Legacy() {
				t.Errorf("Classify = %v (legacy %v), want %s", got, got.Legacy(), tc.want)
			}
			if ee.HTTPStatus() != ee.Status() {
				t.Errorf("HTTPStatus %d, Status %d", ee.HTTPStatus(), ee.Status())
			}
		})
	}
}
