package invarianttest

import (
	"context"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/invariant"
	"github.com/blackboardkernel/bk/store"
)

// Check runs [invariant.Check] over st and fails t, listing every
// violation, when there is any, or when the store cannot be read.
func Check(t testing.TB, st store.Store) {
	t.Helper()
	vs, err := invariant.Check(context.Background(), st)
	if err != nil {
		t.Errorf("invariant check: %v", err)
		return
	}
	if len(vs) == 0 {
		return
	}
	var b strings.Builder
	for _, v := range vs {
		b.WriteString("\n\t")
		b.WriteString(v.String())
	}
	t.Errorf("invariant check: %d violation(s):%s", len(vs), b.String())
}

// Cleanup registers [Check] of st to run when t ends. Call it after the
// t.Cleanup that closes st: cleanups run last registered first, so the
// check then reads the store before it is closed.
func Cleanup(t testing.TB, st store.Store) {
	t.Helper()
	t.Cleanup(func() { Check(t, st) })
}
