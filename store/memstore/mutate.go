//go:build bkmutate

package memstore

import "github.com/blackboardkernel/bk/internal/mutant"

// The kernel's mutation switches this store's checks answer to (the
// kernel registers them; see its mutate_state.go).
func mutStateVersion() bool { return mutant.On("state_version") }
func mutSharedCache() bool  { return mutant.On("shared_cache") }
