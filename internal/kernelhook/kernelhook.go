// Package kernelhook gives the module's own packages (the tool gate, the
// supervisor, the inspector) what they read of a kernel that no integrator
// needs: its clock and its namespace, which an integrator set in the
// kernel's Config and so already knows. Package kernel sets the hooks when
// it is initialised; the arguments are *kernel.Kernel values (this package
// sits below the kernel and cannot name its type).
package kernelhook

import "time"

// Now returns the clock reading of the kernel k, so that code deciding on
// records (an approval's expiry, a lease) uses the kernel's time.
var Now func(k any) time.Time

// Namespace returns the namespace the kernel k works in.
var Namespace func(k any) string

// KindBeliefValidation is the kind of the evidence artifact the kernel
// writes with a committed belief: the checks each percept passed. The
// inspector explains such artifacts.
const KindBeliefValidation = "belief_validation"
