package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// ErrCorrupt is wrapped by the error of [Open] and [OpenReadOnly] given
// [WithCheck] for a database file SQLite finds
// damaged: a malformed page or index, or a file that begins as an SQLite
// database and is not one. (A file that does not begin as one is
// [ErrNotAStore].)
var ErrCorrupt = errors.New("sqlitestore: database is corrupt")

// WithCheck makes [Open] and [OpenReadOnly] read the whole database file
// (SQLite's quick_check) before they use it, and refuse a damaged one with
// an error wrapping [ErrCorrupt]. Open checks through a connection that
// may not write, before it sets the journal mode or migrates the schema,
// so a damaged file is left exactly as it was. The check reads every page:
// its cost grows with the file. Programs that open a database once, at
// start, should give it; a missing file passes (Open creates it).
func WithCheck() Option { return func(c *config) { c.check = true } }

// checkFile runs [WithCheck]'s check on the file at abs through a
// connection of its own that may not write (query_only; mode=ro when a
// journal lies beside it), for Open to call before it writes anything. A
// missing file passes.
func checkFile(ctx context.Context, path, abs string) error {
	if _, err := os.Stat(abs); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	q := url.Values{}
	if !quiescent(abs) {
		q.Set("mode", "ro")
	}
	q.Add("_pragma", "query_only(1)")
	db, err := sql.Open("sqlite", (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}).String())
	if err != nil {
		return fmt.Errorf("sqlitestore: %w", err)
	}
	return errors.Join(quickCheck(ctx, db, path), db.Close())
}

// quickCheck runs quick_check on db, whose file is path.
func quickCheck(ctx context.Context, db *sql.DB, path string) error {
	if mutNoCheck {
		return nil
	}
	return runQuickCheck(ctx, db, path)
}

// runQuickCheck is quickCheck's work.
func runQuickCheck(ctx context.Context, db *sql.DB, path string) error {
	rows, err := db.QueryContext(ctx, "PRAGMA quick_check")
	if err != nil {
		return checkError(ctx, path, err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return checkError(ctx, path, err)
		}
		if line != "ok" && len(problems) < 3 {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return checkError(ctx, path, err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s: %s", ErrCorrupt, path, strings.Join(problems, "; "))
	}
	return nil
}

// checkError words a failed check: SQLite's "malformed" and "not a
// database" are corruption; anything else (a lock, an ended context) is
// returned as it is, naming the file.
func checkError(ctx context.Context, path string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("sqlitestore: %s: %w", path, ctx.Err())
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_NOTADB:
			if !sqliteHeader(path) {
				// Some other file, not a damaged database.
				return fmt.Errorf("%w: %s is not an SQLite database", ErrNotAStore, path)
			}
			return fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
		case sqlite3.SQLITE_CORRUPT:
			return fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
		}
	}
	return fmt.Errorf("sqlitestore: %s: %w", path, err)
}

// sqliteHeader reports whether the file at path begins as every SQLite
// database does.
func sqliteHeader(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [16]byte
	_, err = io.ReadFull(f, b[:])
	return err == nil && string(b[:]) == "SQLite format 3\x00"
}
