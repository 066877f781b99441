//go:build !unix

package toolgate

import "fmt"

// lockFile refuses: without flock a key file could be opened twice, and
// one Keys could write back a key another erased.
func lockFile(path string) (unlock func() error, err error) {
	return nil, fmt.Errorf("%w: key files need a Unix system to lock %s", ErrInvalidConfig, path)
}
