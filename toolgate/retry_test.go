package toolgate

import (
	"testing"
	"time"
)

// A tool that sets no retry policy gets the documented defaults, field by
// field, and a backoff longer than the default ceiling raises the ceiling.
func TestRetryDefaults(t *testing.T) {
	got := RetryPolicy{}.withDefaults()
	want := RetryPolicy{MaxAttempts: defaultMaxAttempts, Backoff: defaultBackoff}
	if got != want {
		t.Errorf("zero policy: got %+v, want %+v", got, want)
	}
	got = RetryPolicy{MaxAttempts: 1, Backoff: time.Minute}.withDefaults()
	if got.MaxAttempts != 1 || got.Backoff != time.Minute {
		t.Errorf("set fields: got %+v", got)
	}
}

// TestBackoffCapped: the wait doubles from Backoff and never passes 25
// times it, with jitter drawing from the upper half.
func TestBackoffCapped(t *testing.T) {
	p := RetryPolicy{MaxAttempts: 20, Backoff: time.Millisecond}
	for n := 1; n <= 20; n++ {
		want := min(time.Millisecond<<(n-1), 25*time.Millisecond)
		for range 50 {
			if d := backoff(p, n); d < want/2 || d > want {
				t.Fatalf("attempt %d: wait %v, want within [%v, %v]", n, d, want/2, want)
			}
		}
	}
}
