//go:build !bkmutate

package rules

// Without the bkmutate tag every check is on (see mutate.go).
const (
	mutStaticCost = false
	mutInputBound = false
)
