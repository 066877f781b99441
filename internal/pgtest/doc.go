// Package pgtest sets up the PostgreSQL tests of this module: the server
// comes from the environment (BK_PG_DSN), and each test gets a schema of
// its own, dropped when the test ends, so tests run in parallel, in several
// processes and again and again against one database.
//
// Without BK_PG_DSN the tests skip, saying how to run them.
package pgtest
