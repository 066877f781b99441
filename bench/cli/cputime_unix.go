//go:build unix

package cli

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time, user and system, the process has used so
// far; ok is false where the system does not say.
func cpuTime() (d time.Duration, ok bool) {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0, false
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano()), true
}
