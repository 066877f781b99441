package storeflag

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// The store kinds.
const (
	Memory   = "memory"
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// Resolve returns the store kind that --store, --db and --dsn ask for:
// --db FILE alone means sqlite, nothing means memory, --store sqlite needs
// --db and --store postgres needs --dsn, and neither file nor DSN goes with
// another kind. Callers wrap the error in their own usage error.
func Resolve(store, db, dsn string) (string, error) {
	if store == "" {
		store = Memory
		if db != "" {
			store = SQLite
		}
	}
	switch {
	case store != Memory && store != SQLite && store != Postgres:
		return "", fmt.Errorf("--store must be memory, sqlite or postgres, not %q", store)
	case store == SQLite && db == "":
		return "", errors.New("--store sqlite needs --db FILE")
	case store == Postgres && dsn == "":
		return "", errors.New("--store postgres needs --dsn DSN")
	case store != SQLite && db != "":
		return "", errors.New("--db is for --store sqlite")
	case store != Postgres && dsn != "":
		return "", errors.New("--dsn is for --store postgres")
	}
	return store, nil
}

// CheckDir refuses a --db file whose directory does not exist, so that a
// program fails before it does any work.
func CheckDir(db string) error {
	if db == "" {
		return nil
	}
	if fi, err := os.Stat(filepath.Dir(db)); err != nil || !fi.IsDir() {
		return fmt.Errorf("--db %s: directory %s does not exist", db, filepath.Dir(db))
	}
	return nil
}
