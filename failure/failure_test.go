package failure_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/blackboardkernel/bk/failure"
)

func TestStatusTable(t *testing.T) {
	want := map[failure.ExecStatus]failure.Category{
		"FAILED_INCOMPLETE_FETCH":     "endpoint_unknown",
		"FAILED_SILENT_PARTIAL_FETCH": "endpoint_unknown",
		"FAILED_SCHEMA_INCOMPLETE":    "format_error",
		"FAILED_AUTH_EXPIRED":         "auth_error",
		"FAILED_AUTH_DENIED":          "auth_error",
		"FAILED_ENDPOINT_UNKNOWN":     "endpoint_unknown",
		"FAILED_NOT_FOUND":            "not_found",
		"FAILED_DUPLICATE":            "duplicate",
		"FAILED_RATE_LIMITED":         "rate_limit",
		"FAILED_NETWORK":              "network",
		"FAILED_TIMEOUT":              "network",
		"FAILED_PROVIDER_DOWN":        "provider_down",
		"FAILED_SYNTAX":               "code_syntax",
		"FAILED_FUNCTION_MISMATCH":    "function_mismatch",
		"FAILED_FORMAT":               "format_error",
		"FAILED_UNKNOWN":              "unknown",
	}
	got := failure.Statuses()
	if len(got) != len(want) {
		t.Fatalf("%d statuses, want %d", len(got), len(want))
	}
	reached := map[failure.Category]bool{}
	for _, s := range got {
		c, ok := failure.CategoryOf(s)
		if !ok || c != want[s] {
			t.Errorf("CategoryOf(%s) = %s, %v; want %s", s, c, ok, want[s])
		}
		if !c.Valid() {
			t.Errorf("%s maps outside the taxonomy: %s", s, c)
		}
		reached[c] = true
	}
	for _, c := range failure.Categories() {
		if !reached[c] {
			t.Errorf("no status maps to %s", c)
		}
	}
	for _, s := range []failure.ExecStatus{failure.StatusSucceeded, "FAILED_BOGUS", ""} {
		if c, ok := failure.CategoryOf(s); ok {
			t.Errorf("CategoryOf(%q) = %s", s, c)
		}
	}
	// The slices are copies.
	failure.Statuses()[0] = "X"
	failure.Categories()[0] = "X"
	if failure.Statuses()[0] == "X" || failure.Categories()[0] == "X" {
		t.Error("a returned slice aliases a table")
	}
}

func TestClasses(t *testing.T) {
	want := map[failure.Category]failure.Class{
		"auth_error": "state", "duplicate": "state",
		"endpoint_unknown": "spec", "not_found": "spec",
		"rate_limit": "infrastructure", "network": "infrastructure", "provider_down": "infrastructure",
		"code_syntax": "skill", "function_mismatch": "skill", "format_error": "skill",
		"unknown": "unknown", "bogus": "unknown", "": "unknown",
	}
	for c, k := range want {
		if got := failure.ClassOf(c); got != k {
			t.Errorf("%q.Class() = %s, want %s", c, got, k)
		}
	}
	if failure.Category("bogus").Valid() || failure.Category("").Valid() {
		t.Error("Valid accepts a category outside the taxonomy")
	}
}

func TestFailureValue(t *testing.T) {
	f := failure.New(failure.StatusRateLimited, "slow down")
	if f.Status() != failure.StatusRateLimited || f.Category() != failure.RateLimit || failure.ClassOf(f.Category()) != failure.ClassInfrastructure ||
		f.Message() != "slow down" || !f.Retryable() || f.Legacy() || f.IsZero() || f.Unwrap() != nil {
		t.Fatalf("New: %#v", f)
	}
	if got := f.Error(); got != "failure: rate_limit (FAILED_RATE_LIMITED): slow down" {
		t.Errorf("Error() = %q", got)
	}
	g := f.WithRetryable(false)
	cause := errors.New("quota")
	h := f.WithCause(cause)
	if !f.Retryable() || f.Unwrap() != nil {
		t.Error("a With method changed the original")
	}
	if g.Retryable() || !errors.Is(h, cause) {
		t.Error("a With method did not change the copy")
	}
	for _, s := range []failure.ExecStatus{failure.StatusSucceeded, "FAILED_QUOTA"} {
		if u := failure.New(s, ""); u.Category() != failure.Unknown || u.Status() != s || u.Retryable() {
			t.Errorf("New(%s): %s retryable=%v", s, u.Category(), u.Retryable())
		}
	}
	if got := failure.New(failure.StatusSyntax, "").Error(); got != "failure: code_syntax (FAILED_SYNTAX)" {
		t.Errorf("Error() = %q", got)
	}
	if got := (failure.Failure{}).Error(); got != "failure: none" {
		t.Errorf("zero Error() = %q", got)
	}
	long := failure.New(failure.StatusFormat, strings.Repeat("é", failure.MaxMessage))
	if m := long.Message(); len(m) > failure.MaxMessage || !utf8.ValidString(m) || !strings.HasSuffix(m, "…") {
		t.Errorf("long message kept as %d bytes, valid %v", len(m), utf8.ValidString(m))
	}
}

func TestPayloadRoundTrip(t *testing.T) {
	for _, s := range append(failure.Statuses(), "FAILED_QUOTA") {
		for _, r := range []bool{true, false} {
			f := failure.New(s, "msg "+string(s)).WithRetryable(r)
			p := f.Payload()
			if p["category"] != string(f.Category()) {
				t.Errorf("%s: payload category %v", s, p["category"])
			}
			g, ok := failure.FromResult(p)
			if !ok || g.Status() != f.Status() || g.Category() != f.Category() || g.Message() != f.Message() ||
				g.Retryable() != r || g.Legacy() {
				t.Errorf("%s retryable=%v: round trip gives %v retryable=%v", s, r, g, g.Retryable())
			}
		}
	}
	legacy := failure.Classify(errors.New("connection refused by peer"))
	if g, _ := failure.FromResult(legacy.Payload()); !g.Legacy() || g.Status() != failure.StatusNetwork {
		t.Errorf("legacy round trip: %v legacy=%v", g, g.Legacy())
	}
	if (failure.Failure{}).Payload() != nil {
		t.Error("zero Failure has a payload")
	}
}

func TestFromResult(t *testing.T) {
	for name, tc := range map[string]struct {
		result map[string]any
		ok     bool
		status failure.ExecStatus
		legacy bool
	}{
		"nil":              {nil, false, "", false},
		"plain data":       {map[string]any{"rows": []any{1}}, false, "", false},
		"succeeded":        {map[string]any{"execution_status": "SUCCEEDED", "error": "ignored"}, false, "", false},
		"empty error":      {map[string]any{"error": ""}, false, "", false},
		"null error":       {map[string]any{"error": nil}, false, "", false},
		"typed":            {map[string]any{"execution_status": "FAILED_NOT_FOUND"}, true, failure.StatusNotFound, false},
		"typed, new":       {map[string]any{"execution_status": "FAILED_QUOTA"}, true, "FAILED_QUOTA", false},
		"untyped":          {map[string]any{"error": "401 Unauthorized"}, true, failure.StatusAuthExpired, true},
		"structured error": {map[string]any{"error": map[string]any{"code": "too many requests"}}, true, failure.StatusRateLimited, true},
		"category ignored": {map[string]any{"execution_status": "FAILED_SYNTAX", "category": "network"}, true, failure.StatusSyntax, false},
	} {
		f, ok := failure.FromResult(tc.result)
		if ok != tc.ok || f.Status() != tc.status || f.Legacy() != tc.legacy {
			t.Errorf("%s: got %v %s legacy=%v", name, ok, f.Status(), f.Legacy())
		}
		if name == "category ignored" && f.Category() != failure.CodeSyntax {
			t.Errorf("%s: category %s", name, f.Category())
		}
	}
}
