package sqlitestore_test

import (
	"path/filepath"
	"testing"

	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/storetest"
)

// TestStoreEquivalence runs storetest's scripted scenario on a kernel over a
// memory store and on a kernel over a SQLite file, and requires the same codes,
// ids, views and records.
func TestStoreEquivalence(t *testing.T) {
	storetest.Equivalence(t, map[string]store.Store{"sqlite": mustOpen(t, filepath.Join(t.TempDir(), "bk.db"))})
}
