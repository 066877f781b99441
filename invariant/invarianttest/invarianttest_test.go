package invarianttest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/invariant/invarianttest"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
)

// recorder is a testing.TB that keeps what Check reports.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Errorf(f string, a ...any) { r.errs = append(r.errs, fmt.Sprintf(f, a...)) }

// broken is a store holding two effects of an action that was never
// committed.
func broken(t *testing.T) store.Store {
	t.Helper()
	st := memstore.New()
	for i := 1; i <= 2; i++ {
		r := blackboard.Record{ID: store.RecordID(blackboard.Percepts, "", "T1", i), Slot: blackboard.Percepts, Mode: blackboard.ModeCommit,
			Kind: "refund", Payload: blackboard.Payload{"effect": map[string]any{"status": "succeeded", "tool": "issue_refund",
				"action_id": "actions:T1:99", "attempt": 1.0}},
			Provenance: blackboard.Provenance{Role: blackboard.RoleTool, Writer: "tool:issue_refund", TraceID: "T1", TimestampMS: 1},
			Status:     blackboard.StatusActive, Reason: reason.Committed, Scope: blackboard.ScopeEpisode}
		if err := st.Apply(context.Background(), store.Batch{Appends: []blackboard.Record{r}}); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// TestCheckListsEveryViolation: Check fails the test once, naming every
// violation.
func TestCheckListsEveryViolation(t *testing.T) {
	st := broken(t)
	defer st.Close()
	r := &recorder{TB: t}
	invarianttest.Check(r, st)
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "2 violation(s)") ||
		!strings.Contains(r.errs[0], "percepts:T1:1") || !strings.Contains(r.errs[0], "percepts:T1:2") {
		t.Fatalf("reported %q", r.errs)
	}
	r = &recorder{TB: t}
	invarianttest.Check(r, memstore.New())
	if len(r.errs) != 0 {
		t.Fatalf("a clean store reported %q", r.errs)
	}
}

// TestCleanupRunsBeforeClose: registered after the cleanup that closes
// the store, the check reads it before it is closed, and fails the test
// on a violation.
func TestCleanupRunsBeforeClose(t *testing.T) {
	st := broken(t)
	r := &recorder{TB: t}
	t.Run("case", func(t *testing.T) {
		t.Cleanup(func() { st.Close() })
		r.TB = t
		invarianttest.Cleanup(r, st)
	})
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "2 violation(s)") {
		t.Fatalf("reported %q, want the violations read before the store closed", r.errs)
	}
}
