//go:build unix

package toolgate

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on the file at path (created 0600 if
// missing) for the caller's lifetime, or fails with [ErrKeyFileBusy]
// when another holds it. The system releases it when the process ends,
// so a crash leaves no stale lock.
func lockFile(path string) (unlock func() error, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("key file lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is locked", ErrKeyFileBusy, path)
		}
		return nil, fmt.Errorf("key file lock %s: %w", path, err)
	}
	return f.Close, nil // closing the descriptor releases the lock
}
