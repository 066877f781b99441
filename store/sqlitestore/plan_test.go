package sqlitestore

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/store"
)

// TestStoreQueryPlans checks with EXPLAIN QUERY PLAN that every statement
// finds its rows through an index: no full scan of the table or of an index,
// and no sort, however many records of other traces (and, for the
// persistent listings, of other namespaces) the store holds.
func TestStoreQueryPlans(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "bk.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	// Fill the store so that the planner sees a populated table.
	var b store.Batch
	for i := range 2000 {
		r := blackboard.Record{
			ID: fmt.Sprintf("percepts:fill-%d:%d", i%26, i), Slot: blackboard.AllSlots()[i%7], Mode: blackboard.ModeCommit,
			Kind: "k", Provenance: blackboard.Provenance{Role: blackboard.RoleTool, TraceID: fmt.Sprintf("fill-%d", i%26)},
			Status: blackboard.StatusActive, Scope: blackboard.ScopeEpisode, Namespace: fmt.Sprintf("ns-%d", i%26%5), // one namespace per trace
		}
		if i%10 == 0 {
			r.Scope = blackboard.ScopePersistent
		}
		b.Appends = append(b.Appends, r)
		if i%3 == 0 {
			b.Claims = append(b.Claims, store.Claim{Key: fmt.Sprintf("key-%d", i), RecordID: r.ID})
		}
	}
	if err := s.Apply(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	// Some status changes, so that the index of changed records holds rows.
	var invs store.Batch
	for i := 0; i < 2000; i += 7 {
		invs.Invalidations = append(invs.Invalidations, store.Invalidation{ID: b.Appends[i].ID, Status: blackboard.StatusInvalidated, Reason: "TEST"})
	}
	if err := s.Apply(t.Context(), invs); err != nil {
		t.Fatal(err)
	}

	plans := []struct {
		name  string
		query string
		args  []any
		index string // table name, then the index name
	}{
		{"Get", queryGet, []any{"percepts:t:1"}, "records USING INDEX sqlite_autoindex_records_1"},
		{"FindActive", queryFind, []any{"t", "default", "beliefs", "door", "ACTIVE"}, "records USING INDEX records_trace"},
		{"ListTrace", queryTrace, []any{"t", "default", 0, pageSize}, "records USING INDEX records_trace"},
		{"ListSlot active persistent", querySlotPersistent, []any{"constraints", "ACTIVE", 0, pageSize}, "records USING INDEX records_persistent"},
		{"ListSlot active persistent of a namespace", querySlotPersistentNS, []any{"constraints", "ACTIVE", "ns-1", 0, pageSize}, "records USING INDEX records_persistent_ns"},
		{"ListSlot other filters", querySlotAny, []any{"constraints", "", "", "", 0, pageSize}, "records USING INDEX records_slot"},
		{"ListSlot other filters with a namespace", querySlotAny, []any{"constraints", "ACTIVE", "", "ns-1", 0, pageSize}, "records USING INDEX records_slot"},
		{"Invalidate", queryInvalidate, []any{"INVALIDATED", "X", "percepts:t:1", "ACTIVE"}, "records USING INDEX sqlite_autoindex_records_1"},
		{"status of a record", queryStatus, []any{"percepts:t:1"}, "records USING INDEX sqlite_autoindex_records_1"},
		{"ClaimedBy", queryClaimedBy, []any{"default", "key-3"}, "once_keys USING PRIMARY KEY"},
		{"ReadState", queryReadState, []any{"fill-3", "ns-1"}, "traces USING INDEX sqlite_autoindex_traces_1"},
		{"ReadState: the namespace's counter", queryReadState, []any{"fill-3", "ns-1"}, "namespaces USING PRIMARY KEY"},
		{"Apply: the trace's count", queryCount, []any{"fill-3", "ns-1"}, "traces USING INDEX sqlite_autoindex_traces_1"},
		{"Apply: a state", querySetState, []any{"fill-3", []byte("s"), "ns-1"}, "traces USING INDEX sqlite_autoindex_traces_1"},
		{"Invalidate: the trace's chain", queryInvalidate, []any{"INVALIDATED", "X", "percepts:t:1", "ACTIVE"}, "t USING INDEX sqlite_autoindex_traces_1"},
		{"Apply: a status change's link", queryEnd, []any{1, []byte("l"), 7}, "records USING INTEGER PRIMARY KEY"},
		{"Apply: a chain's head", querySetHead, []any{"fill-3", "ns-1", 3, []byte("h")}, "traces USING INDEX sqlite_autoindex_traces_1"},
		{"Head", queryHead, []any{"fill-3", "ns-1"}, "traces USING INDEX sqlite_autoindex_traces_1"},
		{"Chain: appends", queryChainAppends, []any{"fill-3", "ns-1", 0, pageSize}, "records USING INDEX records_trace"},
		{"Chain: status changes", queryChainEnds, []any{"fill-3", "ns-1", -1, 0, pageSize}, "records USING INDEX records_ended"},
	}
	// The plans must hold as SQLite plans them by default and after ANALYZE
	// has given the planner statistics.
	for _, analyzed := range []bool{false, true} {
		if analyzed {
			if _, err := s.db.ExecContext(t.Context(), "ANALYZE"); err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range plans {
			plan := explain(t, s, p.query, p.args)
			covering := strings.Replace(p.index, "USING INDEX", "USING COVERING INDEX", 1)
			if !strings.Contains(plan, "SEARCH "+p.index+" ") && !strings.Contains(plan, "SEARCH "+covering+" ") {
				t.Errorf("%s (analyzed %v) is not answered through index %s: plan %q", p.name, analyzed, p.index, plan)
			}
			if strings.Contains(plan, "SCAN") || strings.Contains(plan, "TEMP B-TREE") {
				t.Errorf("%s (analyzed %v) scans or sorts: plan %q", p.name, analyzed, plan)
			}
		}
	}
}

// explain returns the details of a statement's query plan, joined by "; ".
func explain(t *testing.T, s *Store, query string, args []any) string {
	t.Helper()
	rows, err := s.db.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatalf("EXPLAIN QUERY PLAN %s: %v", query, err)
	}
	defer rows.Close()
	var details []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		details = append(details, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(details, "; ")
}
