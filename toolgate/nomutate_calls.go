//go:build !bkmutate

package toolgate

// The mutation switches of mutate_calls.go, off for good in the default
// build.
const (
	mutLeaseDeadline    = false
	mutLeaseLeft        = false
	mutBudgetCompose    = false
	mutToolName         = false
	mutArgBinding       = false
	mutBindingsDeclared = false
	mutBindCommitted    = false
)

// The switch of mutUnkeyedRedrive in mutate_calls.go, off.
const mutUnkeyedRedrive = false

// The switches of retry keys in mutate_calls.go, off.
const (
	mutRetryKeyOnce    = false
	mutRetryKeyBinding = false
)
