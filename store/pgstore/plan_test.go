package pgstore

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/pgtest"
	"github.com/blackboardkernel/bk/store"
)

// TestQueryPlans checks with EXPLAIN that every statement of the store
// finds its rows through the index meant for it and no other, never with a
// sequential scan, however many records of other traces, slots and
// namespaces the store holds: as the server plans them for the values
// given (custom plans) and for any values (the generic plans a prepared
// statement switches to after a few runs), before and after ANALYZE. Where
// two indexes fit (a trace's records are also at the front of the kind
// index; persistent records of every namespace are a superset of one
// namespace's), either will do. The server may sort what an index found
// rather than read the index in order; that costs in proportion to the
// rows found (one trace's, or the slot's persistent records), not to the
// store. ListSlot with other filters is the analysis path: it reads the
// slot's records through the slot index or, when the server prefers, the
// store's in append order.
func TestQueryPlans(t *testing.T) {
	ctx := t.Context()
	pool := pgtest.Pool(t)
	s, err := New(ctx, pool, WithSchema(pgtest.Schema(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// 20,000 records of 2,000 traces in every slot and five namespaces, a
	// tenth of them persistent, 4,000 claimed keys and the constraints'
	// counters of 2,000 namespaces.
	slots := blackboard.AllSlots()
	for chunk := range 20 {
		var b store.Batch
		for j := range 1000 {
			i := chunk*1000 + j
			trace := fmt.Sprintf("fill-%d", i%2000)
			r := blackboard.Record{
				ID: fmt.Sprintf("%s:%s:%d", slots[i%7], trace, i), Slot: slots[i%7], Mode: blackboard.ModeCommit,
				Kind: fmt.Sprintf("k%d", i%11), Provenance: blackboard.Provenance{Role: blackboard.RoleTool, TraceID: trace},
				Status: blackboard.StatusActive, Scope: blackboard.ScopeEpisode, Namespace: fmt.Sprintf("ns-%d", i%5),
			}
			if i%10 == 0 {
				r.Scope = blackboard.ScopePersistent
			}
			b.Appends = append(b.Appends, r)
			if i%5 == 0 {
				b.Claims = append(b.Claims, store.Claim{Key: fmt.Sprintf("key-%d", i), RecordID: r.ID})
			}
		}
		if err := s.Apply(ctx, b); err != nil {
			t.Fatal(err)
		}
	}

	// The counters of 2,000 namespaces, as many as the traces.
	if _, err := pool.Exec(ctx, "INSERT INTO "+s.schemaTable("bk_namespaces")+" (namespace, shared)"+
		" SELECT 'fill-' || g, 1 FROM generate_series(1, 2000) AS g"); err != nil {
		t.Fatal(err)
	}

	q := s.q
	plans := []struct {
		name    string
		query   string
		args    []any
		indexes []string // the index it must use, then any it may use instead
	}{
		{"Get", q.get, []any{"percepts:fill-3:4"}, []string{"bk_records_id"}},
		{"FindActive", q.find, []any{"fill-3", "default", "beliefs", "k1", active}, []string{"bk_records_kind"}},
		{"ListTrace", q.trace, []any{"fill-3", "default", int64(0), int64(pageSize)}, []string{"bk_records_trace", "bk_records_kind"}},
		{"ReadState", q.readState, []any{"fill-3", "ns-1"}, []string{"bk_traces_pkey", "bk_namespaces_pkey"}},
		{"ClaimedBy", q.claimedBy, []any{"default", "key-5"}, []string{"bk_once_keys_pkey"}},
		{"ListSlot of a namespace's active persistent records", q.slotPersistentNS,
			[]any{"constraints", "ns-1", active, int64(0), int64(pageSize)}, []string{"bk_records_persistent_ns", "bk_records_persistent"}},
		{"ListSlot of active persistent records", q.slotPersistent,
			[]any{"constraints", active, int64(0), int64(pageSize)}, []string{"bk_records_persistent", "bk_records_persistent_ns"}},
		{"ListSlot, other filters", q.slotAny, []any{"constraints", "", "", "", int64(0), int64(pageSize)}, []string{"bk_records_slot", "bk_records_pkey"}},
		{"ListSlot, other filters with a namespace", q.slotAny,
			[]any{"constraints", active, "", "ns-1", int64(0), int64(pageSize)}, []string{"bk_records_slot", "bk_records_pkey"}},
		{"Apply: status change", q.invalidate, []any{"INVALIDATED", "X", "percepts:fill-3:4", active, linkPrefix, make([]byte, 32)},
			[]string{"bk_records_id", "bk_traces_pkey"}},
		{"Chain", q.chain, []any{"fill-3", "default"}, []string{"bk_records_trace", "bk_records_kind"}},
		{"Head", q.head, []any{"fill-3", "default"}, []string{"bk_traces_pkey"}},
		{"Apply: trace counters", q.lockTraces, []any{[]string{"fill-3", "fill-4"}, []int64{1, 2}, []string{"default", "default"}}, []string{"bk_traces_pkey"}},
		{"Apply: trace counters and condition", q.lockTracesIf,
			[]any{[]string{"fill-3", "fill-4"}, []int64{1, 2}, []string{"default", "default"}, "fill-3", int64(1), int64(10), "default"}, []string{"bk_traces_pkey"}},
		{"Apply: count the status changes", q.countInvalidated, []any{[]string{"percepts:fill-3:4", "percepts:fill-4:5"}, []string{"fill-4"}, []string{"default"}},
			[]string{"bk_traces_pkey", "bk_records_id"}},
		{"Apply: count the namespaces' constraint changes", q.share, []any{[]string{"ns-2"}, []string{"constraints:fill-3:10", "percepts:fill-4:5"}},
			[]string{"bk_records_id", "bk_namespaces_pkey"}},
		{"Apply: a state", q.setState, []any{"fill-3", []byte("state"), "default"}, []string{"bk_traces_pkey"}},
		{"Apply: insert at the counter's position", q.insert, []any{"percepts:fill-3:99", "fill-3", int64(0), "percepts", "commit",
			"door", "{}", "tool", "w", int64(1), []string(nil), nil, int64(0), []string(nil), active, "COMMITTED", "episode", "default", "",
			linkPrefix, make([]byte, 32)},
			[]string{"bk_traces_pkey"}},
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, analyzed := range []bool{false, true} {
		if analyzed {
			if _, err := conn.Exec(ctx, "ANALYZE "+s.schemaTable("bk_records")+", "+s.schemaTable("bk_traces")+", "+s.schemaTable("bk_once_keys")+", "+s.schemaTable("bk_namespaces")); err != nil {
				t.Fatal(err)
			}
		}
		for _, generic := range []bool{false, true} {
			for _, p := range plans {
				if generic && strings.Contains(p.query, "INSERT INTO") && strings.Contains(p.name, "insert") {
					continue // an insert's plan does not depend on its values
				}
				nodes, indexes, summary := explain(t, conn, p.query, p.args, generic)
				how := fmt.Sprintf("(analyzed %v, generic plan %v)", analyzed, generic)
				if len(indexes) == 0 {
					t.Errorf("%s %s uses no index: %s", p.name, how, summary)
				}
				for _, ix := range indexes {
					if !slices.Contains(p.indexes, ix) {
						t.Errorf("%s %s uses index %s, not %s: %s", p.name, how, ix, p.indexes[0], summary)
					}
				}
				if slices.Contains(nodes, "Seq Scan") {
					t.Errorf("%s %s scans the table: %s", p.name, how, summary)
				}
			}
		}
	}
}

func (s *Store) schemaTable(name string) string {
	return fmt.Sprintf("%q.%q", s.schema, name)
}

// explain returns the node types and index names of a statement's plan,
// and a summary of it. A generic plan is the one the server makes for a
// prepared statement without looking at its values.
func explain(t *testing.T, conn *pgxpool.Conn, query string, args []any, generic bool) (nodes, indexes []string, raw string) {
	t.Helper()
	ctx := t.Context()
	var out []byte
	if !generic {
		if err := conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+query, args...).Scan(&out); err != nil {
			t.Fatalf("EXPLAIN %s: %v", query, err)
		}
	} else {
		lits := make([]string, len(args))
		for i, a := range args {
			lits[i] = literal(t, a)
		}
		for _, stmt := range []string{"PREPARE bk_plan AS " + query, "SET plan_cache_mode = force_generic_plan"} {
			if _, err := conn.Exec(ctx, stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
		err := conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) EXECUTE bk_plan("+strings.Join(lits, ", ")+")").Scan(&out)
		for _, stmt := range []string{"DEALLOCATE bk_plan", "RESET plan_cache_mode"} {
			if _, err := conn.Exec(ctx, stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
		if err != nil {
			t.Fatalf("EXPLAIN EXECUTE %s: %v", query, err)
		}
	}
	var doc []struct{ Plan map[string]any }
	if err := json.Unmarshal(out, &doc); err != nil || len(doc) != 1 {
		t.Fatalf("EXPLAIN output %s: %v", out, err)
	}
	// The summary reads like "Limit(Sort(Bitmap Heap Scan(Bitmap Index
	// Scan bk_records_trace)))".
	var walk func(n map[string]any) string
	walk = func(n map[string]any) string {
		typ, _ := n["Node Type"].(string)
		nodes = append(nodes, typ)
		desc := typ
		if ix, ok := n["Index Name"].(string); ok {
			indexes = append(indexes, ix)
			desc += " " + ix
		}
		if arbiters, ok := n["Conflict Arbiter Indexes"].([]any); ok {
			for _, a := range arbiters {
				indexes = append(indexes, a.(string))
				desc += " arbiter " + a.(string)
			}
		}
		if f, ok := n["Filter"].(string); ok {
			desc += " filter " + f
		}
		if kids, ok := n["Plans"].([]any); ok {
			var sub []string
			for _, k := range kids {
				sub = append(sub, walk(k.(map[string]any)))
			}
			desc += "(" + strings.Join(sub, ", ") + ")"
		}
		return desc
	}
	return nodes, indexes, walk(doc[0].Plan)
}

// literal writes a test value as an SQL literal.
func literal(t *testing.T, v any) string {
	switch x := v.(type) {
	case string:
		return "'" + strings.ReplaceAll(x, "'", "''") + "'"
	case int64:
		return strconv.FormatInt(x, 10)
	case []string:
		q := make([]string, len(x))
		for i, s := range x {
			q[i] = literal(t, s)
		}
		return "ARRAY[" + strings.Join(q, ", ") + "]::text[]"
	case []byte:
		return fmt.Sprintf("'\\x%x'::bytea", x)
	case []int64:
		q := make([]string, len(x))
		for i, n := range x {
			q[i] = literal(t, n)
		}
		return "ARRAY[" + strings.Join(q, ", ") + "]::bigint[]"
	}
	t.Fatalf("no literal for %T", v)
	return ""
}
