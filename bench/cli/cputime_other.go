//go:build !unix

package cli

import "time"

// cpuTime returns the CPU time the process has used so far; on this system
// it is not measured (ok is false).
func cpuTime() (d time.Duration, ok bool) { return 0, false }
