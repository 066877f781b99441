package toolgate

import (
	"testing"

	"github.com/blackboardkernel/bk/store"
)

// SetStoreCheck sets the check the desk's tests run over their store
// when they end (see checkStore).
func SetStoreCheck(f func(testing.TB, store.Store)) { checkStore = f }
