package orchestrator

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The default wait ends when its context does: a wait of an hour,
// cancelled, returns the context's error. (Were the context ignored, the
// test would hang until its deadline.)
func TestSleepCtxEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sleepCtx(ctx, time.Hour) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("sleepCtx = %v, want context.Canceled", err)
	}
	if err := sleepCtx(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("a zero wait on a done context: %v", err)
	}
	if err := sleepCtx(context.Background(), time.Nanosecond); err != nil {
		t.Errorf("a short wait: %v", err)
	}
}
