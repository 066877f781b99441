package sqlitestore_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/sqlitestore"
	"github.com/blackboardkernel/bk/store/storetest"
)

// openFile opens a store on a new file in a temporary directory.
func openFile(tb testing.TB) *sqlitestore.Store {
	tb.Helper()
	s, err := sqlitestore.Open(context.Background(), filepath.Join(tb.TempDir(), "bk.db"))
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	return s
}

func openMemory(tb testing.TB) *sqlitestore.Store {
	tb.Helper()
	s, err := sqlitestore.Open(context.Background(), ":memory:")
	if err != nil {
		tb.Fatalf("Open(:memory:): %v", err)
	}
	return s
}

func TestStoreConformanceFile(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openFile(t) })
}

func TestStoreConformanceMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openMemory(t) })
}

func BenchmarkStoreFile(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) store.Store { return openFile(b) })
}

func BenchmarkStoreMemory(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) store.Store { return openMemory(b) })
}
