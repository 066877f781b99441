//go:build !unix

package main

import "os"

// crash kills the process at once: no deferred function runs and nothing
// is flushed.
func crash() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		p.Kill()
	}
	os.Exit(137)
}
