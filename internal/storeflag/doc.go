// Package storeflag resolves the store flags the bench and the examples
// share: --store memory|sqlite|postgres, --db FILE and --dsn DSN, with one
// meaning everywhere. Its functions are pure and safe for concurrent use.
package storeflag
