package wait

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A cancelled context ends a long wait; no timing is asserted.
func TestSleep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Sleep(ctx, time.Hour) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled wait: %v", err)
	}
	if err := Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("zero wait on a cancelled context: %v", err)
	}
	if err := Sleep(context.Background(), time.Nanosecond); err != nil {
		t.Errorf("short wait: %v", err)
	}
}
