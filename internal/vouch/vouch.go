package vouch

// Mark is the kernel's vouch for a batch. Its zero value vouches for
// nothing; only [Set] changes it.
type Mark struct{ kernel bool }

// Set makes m the kernel's vouch.
func Set(m *Mark) { m.kernel = true }

// Vouched reports whether m is the kernel's vouch.
func Vouched(m Mark) bool { return m.kernel }
