package pgstore_test

import (
	"testing"

	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/storetest"
)

// BenchmarkStore is the shared store benchmarks (storetest.Bench).
func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) store.Store { return newStore(b) })
}
