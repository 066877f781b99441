//go:build !bkmutate

package budget

// Without the bkmutate tag every check is on (see mutate.go).
const (
	mutCanonicalDigest = false
	mutSaturate        = false
	mutOverrun         = false
)
