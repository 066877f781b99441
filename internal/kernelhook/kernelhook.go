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
