package gatehook

import "time"

// Lease returns the lease of the gate g: how long an attempt is reserved
// to its driver, which a supervisor waits out before it recovers.
var Lease func(g any) time.Duration
