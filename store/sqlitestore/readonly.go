package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"

	"github.com/blackboardkernel/bk/blackboard"
)

// ErrNotAStore is returned by [OpenReadOnly] for a file that is not a
// SQLite database of this package.
var ErrNotAStore = errors.New("sqlitestore: not a kernel store")

// ErrSchemaTooOld is returned by [OpenReadOnly] for a database whose schema
// predates this package's: a read-only open does not migrate. Opening it
// once with [Open] (any writer of this version) migrates it.
var ErrSchemaTooOld = errors.New("sqlitestore: database schema is older than this package reads")

// OpenReadOnly opens an existing database read-only, for inspection next
// to processes that write it. It writes no record: no migration, no
// journal mode change, every statement runs under SQLite's query_only, and
// every write method of the store fails with an error wrapping
// [blackboard.ErrPermission]. In WAL mode (the mode [Open] sets) a reader
// neither blocks writers nor waits for them; listings read page by page,
// each page a short read transaction.
//
// Reading leaves no file behind. A WAL database needs its -wal and -shm
// files to be read; a writer that closes cleanly deletes them. When they
// are absent (no connection has the database open), the store opens it
// read-write at the file level, still query_only, so that its last
// connection to close removes the files it had to create, as SQLite's last
// connection always does; while another connection holds the database
// (a live writer), that connection keeps the files and its lock, and the
// store's close leaves them. When the files exist (a writer is live, or
// one crashed), the store opens the database with SQLite's mode=ro and
// changes nothing on disk: the WAL a crashed writer left is not
// checkpointed. (A database file the process may not write is read
// read-only by SQLite either way.)
//
// It returns an error wrapping [fs.ErrNotExist] for a missing file,
// [ErrNotAStore] for a file that is not a database of this package,
// [ErrCorrupt] for a damaged file when given [WithCheck],
// [ErrSchemaTooNew] for one written by a newer version, [ErrSchemaTooOld]
// for one an older version wrote and no writer of this version has opened
// since, and ctx's error when ctx ends while the schema is read.
func OpenReadOnly(ctx context.Context, path string, opts ...Option) (*Store, error) {
	cfg := config{busyTimeout: defaultBusyTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	switch {
	case path == "" || path == ":memory:":
		return nil, fmt.Errorf("sqlitestore: %w: read-only needs a database file", blackboard.ErrInvalidInput)
	case cfg.busyTimeout < 0:
		return nil, fmt.Errorf("sqlitestore: %w: negative busy timeout %v", blackboard.ErrInvalidInput, cfg.busyTimeout)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: %w: %v", blackboard.ErrInvalidInput, err)
	}
	st, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("sqlitestore: %s: %w", path, fs.ErrNotExist)
	case err != nil:
		return nil, fmt.Errorf("sqlitestore: %w", err)
	case st.IsDir():
		return nil, fmt.Errorf("%w: %s is a directory", ErrNotAStore, path)
	}
	q := url.Values{}
	if !quiescent(abs) {
		q.Set("mode", "ro")
	}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", cfg.busyTimeout.Milliseconds()))
	q.Add("_pragma", "query_only(1)")
	dsn := (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}).String()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	if cfg.check {
		if err := quickCheck(ctx, db, path); err != nil {
			return nil, errors.Join(err, db.Close())
		}
	}
	s, err := newReadOnly(ctx, db, path)
	if err != nil {
		return nil, errors.Join(err, db.Close())
	}
	s.ownsDB = true
	return s, nil
}

func newReadOnly(ctx context.Context, db *sql.DB, path string) (*Store, error) {
	var tables int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'records'").Scan(&tables); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNotAStore, path, err)
	}
	var version int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNotAStore, path, err)
	}
	switch {
	case tables == 0 || version <= 0:
		return nil, fmt.Errorf("%w: %s has no kernel records table", ErrNotAStore, path)
	case version > len(migrations):
		return nil, fmt.Errorf("%w: %s has schema version %d, this package knows up to %d: use a newer version", ErrSchemaTooNew, path, version, len(migrations))
	case version < len(migrations):
		return nil, fmt.Errorf("%w: %s has schema version %d, this package reads %d: open it once with a writer of this version (sqlitestore.Open) to migrate it",
			ErrSchemaTooOld, path, version, len(migrations))
	}
	s, err := prepare(ctx, db)
	if err != nil {
		return nil, err
	}
	s.readOnly = true
	return s, nil
}

// quiescent reports whether no journal lies beside the database at path:
// no -wal file (every WAL connection to it has closed cleanly, and a
// reader must create the WAL files to read it) and no -journal (no
// rollback a reader opened read-write would have to play back). It only
// looks at names: opening and closing a descriptor of the database would
// drop the POSIX locks a SQLite connection of this process holds on it.
// On any doubt it answers false (mode=ro then).
func quiescent(path string) bool {
	if mutReadOnlyFiles {
		return false
	}
	return noSideFiles(path)
}

// noSideFiles is quiescent's work: path has no -wal and no -journal file.
func noSideFiles(path string) bool {
	for _, suffix := range []string{"-wal", "-journal"} {
		if _, err := os.Lstat(path + suffix); !errors.Is(err, fs.ErrNotExist) {
			return false
		}
	}
	return true
}

var errReadOnly = fmt.Errorf("sqlitestore: %w: the store was opened read-only", blackboard.ErrPermission)
