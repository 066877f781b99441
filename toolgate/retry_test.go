package toolgate

import (
	"testing"
	"time"
)

// A tool that sets no retry policy gets the documented defaults, field by
// field, and a backoff longer than the default ceiling raises the ceiling.
func TestRetryDefaults(t *testing.T) {
	got := RetryPolicy{}.withDefaults()
	want := RetryPolicy{MaxAttempts: defaultMaxAttempts, Backoff: defaultBackoff, MaxBackoff: defaultMaxBackoff}
	if got != want {
		t.Errorf("zero policy: got %+v, want %+v", got, want)
	}
	got = RetryPolicy{MaxAttempts: 1, Backoff: time.Minute}.withDefaults()
	if got.MaxAttempts != 1 || got.Backoff != time.Minute || got.MaxBackoff != time.Minute {
		t.Errorf("set fields: got %+v", got)
	}
}
