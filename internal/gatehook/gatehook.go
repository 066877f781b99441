// Package gatehook gives the module's own packages (the supervisor) what
// they read of a tool gate that no integrator needs: its lease, which an
// integrator set in the gate's Config (or left at its documented default)
// and so already knows. Package toolgate sets the hook when it is
// initialised; the argument is a *toolgate.Gate (this package sits below
// the gate and cannot name its type).
package gatehook

import "time"

// Lease returns the lease of the gate g: how long an attempt is reserved
// to its driver, which a supervisor waits out before it recovers.
var Lease func(g any) time.Duration
