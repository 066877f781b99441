package pgstore_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/sqlitestore"
	"github.com/blackboardkernel/bk/store/storetest"
)

// TestStoreEquivalence runs storetest's scripted scenario, which reaches
// every decision the kernel makes, on the memory store, a SQLite file and
// PostgreSQL, and requires the same decisions, codes, ids, views and
// records from all three.
func TestStoreEquivalence(t *testing.T) {
	pg := newStore(t)
	lite, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "bk.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lite.Close() })
	storetest.Equivalence(t, map[string]store.Store{"sqlite": lite, "postgres": pg})
}
