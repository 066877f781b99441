package wait

import (
	"context"
	"time"
)

// Sleep waits for d or until ctx is done, whichever comes first, and
// returns ctx's error if ctx ended the wait (or was already done when d is
// not positive).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
