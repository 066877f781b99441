package main

import (
	"context"
	"testing"

	"github.com/blackboardkernel/bk/invariant/invarianttest"
	"github.com/blackboardkernel/bk/store/sqlitestore"
)

// checkDB checks the invariants of the records a run left in the SQLite
// file db (see package invariant).
func checkDB(t *testing.T, db string) {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	invarianttest.Check(t, s)
}
