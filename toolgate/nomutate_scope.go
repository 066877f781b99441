//go:build !bkmutate

package toolgate

// The switches of mutate_scope.go, off.
const (
	mutRequestScope     = false
	mutScopeDeclared    = false
	mutRequestPrincipal = false
	mutRequestOnce      = false
)
