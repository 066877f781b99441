package kernel_test

import (
	"testing"

	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/store/storetest"
)

func TestMemStoreConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) kernel.Store { return kernel.NewMemStore() })
}

func BenchmarkMemStore(b *testing.B) {
	storetest.Bench(b, func(*testing.B) kernel.Store { return kernel.NewMemStore() })
}
