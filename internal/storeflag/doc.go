// Package storeflag resolves the store flags the bench, the examples and
// the inspector share: --store memory|sqlite|postgres, --db FILE and --dsn
// DSN, with one meaning everywhere ([Resolve]; [One] for a program that
// reads an existing store and has no --store). Its functions are pure and
// safe for concurrent use.
package storeflag
