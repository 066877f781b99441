package toolgate_test

import (
	"github.com/blackboardkernel/bk/invariant/invarianttest"
	"github.com/blackboardkernel/bk/toolgate"
)

// The desk's tests check the invariants of every store they leave
// behind.
func init() { toolgate.SetStoreCheck(invarianttest.Check) }
