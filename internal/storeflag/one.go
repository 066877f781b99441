package storeflag

import "errors"

// One returns the store kind of a program that reads an existing store and
// takes exactly one of --db FILE and --dsn DSN, with no --store: [SQLite]
// for db, [Postgres] for dsn. Both, or neither, is an error the caller
// wraps in its own usage error.
func One(db, dsn string) (string, error) {
	switch {
	case db != "" && dsn != "":
		return "", errors.New("give --db FILE or --dsn DSN, not both")
	case db != "":
		return SQLite, nil
	case dsn != "":
		return Postgres, nil
	}
	return "", errors.New("give the store with --db FILE or --dsn DSN")
}
