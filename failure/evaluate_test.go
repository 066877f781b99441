package failure_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/failure"
)

// decode reads a JSON tool result, as a worker would receive it.
func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return m
}

func TestEvaluate(t *testing.T) {
	patients := failure.Expect{
		Data:        "data",
		NonEmpty:    true,
		Required:    []string{"data.patients[].id", "data.patients[].name", "source"},
		PerResource: "fetches",
	}
	for _, tc := range []struct {
		name   string
		result string
		want   failure.Expect
		status failure.ExecStatus
		says   []string // in the message
	}{
		{
			name:   "success",
			result: `{"source": "ehr", "data": {"patients": [{"id": 1, "name": "A"}, {"id": 0, "name": "B"}]}, "fetches": [{"id": "p1", "ok": true}, {"id": "p2", "status": 200}]}`,
			want:   patients, status: failure.StatusSucceeded,
		},
		{
			name:   "nothing expected",
			result: `{}`,
			status: failure.StatusSucceeded,
		},
		// Form 1: silent partial fetch.
		{
			name:   "empty data",
			result: `{"source": "ehr", "data": {"patients": [], "visits": {}}, "fetches": []}`,
			want:   patients, status: failure.StatusSilentPartialFetch, says: []string{"no data in data"},
		},
		{
			name:   "data absent",
			result: `{"source": "ehr", "fetches": []}`,
			want:   patients, status: failure.StatusSilentPartialFetch,
		},
		{
			name:   "whole result empty",
			result: `{"items": [], "note": "  "}`,
			want:   failure.Expect{NonEmpty: true}, status: failure.StatusSilentPartialFetch, says: []string{"no data in the result"},
		},
		{
			name:   "zero is data",
			result: `{"count": 0}`,
			want:   failure.Expect{Data: "count", NonEmpty: true}, status: failure.StatusSucceeded,
		},
		// Form 2: mixed per-resource outcomes.
		{
			name:   "one resource failed",
			result: `{"source": "ehr", "data": {"patients": [{"id": 1, "name": "A"}]}, "fetches": [{"id": "p1", "ok": true}, {"id": "p2", "ok": false, "error": "400 missing _count"}]}`,
			want:   patients, status: failure.StatusIncompleteFetch, says: []string{"1 of 2 resources failed", "p2 (400 missing _count)"},
		},
		{
			name:   "outcome forms",
			result: `{"fetches": {"a": {"status": 404}, "b": {"status": "FAILED"}, "c": {"success": false}, "d": {"error": "boom"}, "e": true, "f": "??", "g": {"status": 204, "error": null}}}`,
			want:   failure.Expect{PerResource: "fetches"}, status: failure.StatusIncompleteFetch,
			says: []string{"5 of 7 resources failed", "a (status 404)", "b (status FAILED)", "c (success=false)", "d (boom)", "f (unreadable outcome)"},
		},
		{
			name:   "self-reported partial",
			result: `{"status": "partial_error", "data": [1, 2]}`,
			want:   failure.Expect{NonEmpty: true}, status: failure.StatusIncompleteFetch, says: []string{`status "partial_error"`},
		},
		{
			name:   "mixed beats empty",
			result: `{"data": {}, "fetches": [{"id": "p1", "ok": false}]}`,
			want:   patients, status: failure.StatusIncompleteFetch,
		},
		{
			name:   "outcomes missing",
			result: `{"source": "ehr", "data": {"patients": [{"id": 1, "name": "A"}]}}`,
			want:   patients, status: failure.StatusSchemaIncomplete, says: []string{"per-resource outcomes missing at fetches"},
		},
		// Form 3: schema partial success.
		{
			name:   "fields missing",
			result: `{"source": "", "data": {"patients": [{"id": 1, "name": "A"}, {"id": 2}, {"name": "C"}, {"id": 4, "name": {}}]}, "fetches": []}`,
			want:   patients, status: failure.StatusSchemaIncomplete,
			says: []string{"data.patients[1].name", "data.patients[2].id", "data.patients[3].name", "source"},
		},
		{
			name:   "list expected",
			result: `{"data": {"patients": {"id": 1}}}`,
			want:   failure.Expect{Required: []string{"data.patients[].id"}}, status: failure.StatusSchemaIncomplete, says: []string{"data.patients[].id (not a list)"},
		},
		{
			name:   "non-empty list required",
			result: `{"rows": []}`,
			want:   failure.Expect{Required: []string{"rows[]", "meta.page"}}, status: failure.StatusSchemaIncomplete, says: []string{"rows[], meta.page"},
		},
		// The result's own typed signal comes first.
		{
			name:   "typed signal",
			result: `{"execution_status": "FAILED_AUTH_EXPIRED", "error": "token expired", "data": {"patients": []}}`,
			want:   patients, status: failure.StatusAuthExpired, says: []string{"token expired"},
		},
		{
			name:   "untyped error",
			result: `{"error": "HTTP 429 Too Many Requests"}`,
			want:   patients, status: failure.StatusRateLimited,
		},
		{
			name:   "typed success",
			result: `{"execution_status": "SUCCEEDED", "data": {"patients": [{"id": 1, "name": "A"}]}, "source": "x", "fetches": []}`,
			want:   patients, status: failure.StatusSucceeded,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, err := failure.EvaluateStatus(decode(t, tc.result), tc.want)
			if status != tc.status {
				t.Fatalf("status %s (%v), want %s", status, err, tc.status)
			}
			if (status == failure.StatusSucceeded) != (err == nil) {
				t.Fatalf("status %s with error %v", status, err)
			}
			if err == nil {
				return
			}
			var f failure.Failure
			if !errors.As(err, &f) || f.Status() != status {
				t.Fatalf("error %v is not the Failure of %s", err, status)
			}
			for _, s := range tc.says {
				if !strings.Contains(f.Message(), s) {
					t.Errorf("message %q lacks %q", f.Message(), s)
				}
			}
		})
	}
}

// payload stands for blackboard.Payload: a named map type, with Go values
// rather than JSON-decoded ones.
type payload map[string]any

func TestEvaluateGoValues(t *testing.T) {
	result := payload{
		"data":    payload{"ids": []string{"a", "b"}, "meta": map[string]int{"n": 2}},
		"results": []map[string]any{{"id": "a", "status": 200}, {"id": "b", "status": int64(503)}},
	}
	status, err := failure.EvaluateStatus(result, failure.Expect{Data: "data", NonEmpty: true, Required: []string{"data.ids[]", "data.meta.n"}, PerResource: "results"})
	if status != failure.StatusIncompleteFetch || !strings.Contains(err.Error(), "b (status 503)") {
		t.Fatalf("got %s: %v", status, err)
	}
	result["results"] = []map[string]any{{"id": "a", "status": 200}}
	if status, err := failure.EvaluateStatus(result, failure.Expect{Data: "data", NonEmpty: true, Required: []string{"data.ids[]", "data.meta.n"}, PerResource: "results"}); status != failure.StatusSucceeded {
		t.Fatalf("got %s: %v", status, err)
	}
	result["data"] = payload{"ids": []string{}, "meta": map[string]int{}}
	if status, err := failure.EvaluateStatus(result, failure.Expect{Data: "data", NonEmpty: true}); status != failure.StatusSilentPartialFetch {
		t.Fatalf("got %s: %v", status, err)
	}
	if status, err := failure.EvaluateStatus(nil, failure.Expect{NonEmpty: true}); status != failure.StatusSilentPartialFetch {
		t.Fatalf("nil result: got %s: %v", status, err)
	}
}

func TestEvaluateStatusesRouteAsTheSeedSays(t *testing.T) {
	for s, c := range map[failure.ExecStatus]failure.Category{
		failure.StatusSilentPartialFetch: failure.EndpointUnknown,
		failure.StatusIncompleteFetch:    failure.EndpointUnknown,
		failure.StatusSchemaIncomplete:   failure.FormatError,
	} {
		if got, _ := failure.CategoryOf(s); got != c {
			t.Errorf("%s → %s, want %s", s, got, c)
		}
	}
}

func TestEvaluateListsAtMostEight(t *testing.T) {
	var outcomes []any
	for range 12 {
		outcomes = append(outcomes, map[string]any{"ok": false})
	}
	_, err := failure.EvaluateStatus(map[string]any{"r": outcomes}, failure.Expect{PerResource: "r"})
	if err == nil || !strings.Contains(err.Error(), "12 of 12 resources failed") || !strings.Contains(err.Error(), "#7 (ok=false) and 4 more") {
		t.Fatalf("%v", err)
	}
}
