package ledger_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/chain"
	"github.com/blackboardkernel/bk/internal/ledger"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/mask"
	"github.com/blackboardkernel/bk/store/sqlitestore"
	"github.com/blackboardkernel/bk/toolgate"
)

// The records a gate writes — a decision record, the policy snapshot —
// edited with SQL in a SQLite file: each is a content break of its own
// trace, named by Verify, and the call's receipt no longer matches the
// chain.
func TestVerifySQLiteGateRecords(t *testing.T) {
	for _, a := range []struct {
		name, sql, trace string
	}{
		{"a decision record's outcome", `UPDATE records SET payload = json_set(payload, '$.outcome', 'refused') WHERE kind = 'decision_record'`, "ticket-1"},
		{"the policy snapshot", `UPDATE records SET payload = json_set(payload, '$.policy.contracts', json('{}')) WHERE trace_id LIKE 'bk.policy.%'`, "bk.policy.default"},
	} {
		t.Run(a.name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "bk.db")
			st, err := sqlitestore.Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			pub, priv, _ := ed25519.GenerateKey(rand.Reader)
			g, err := toolgate.New(ctx, toolgate.Config{Kernel: kernel.Config{Store: st, Signer: priv, CheckpointEvery: -1},
				Contracts: map[string][]string{"support": {"lookup_order"}},
				Tools: []toolgate.Tool{{Name: "lookup_order", Description: "Look up an order.", ReadOnly: true, Result: "order",
					Parameters: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"}},"required":["order_id"]}`),
					Effect: func(context.Context, toolgate.Invocation) (blackboard.Payload, error) {
						return blackboard.Payload{"amount": 20.0}, nil
					}}}})
			if err != nil {
				t.Fatal(err)
			}
			res, err := g.Call(ctx, toolgate.Call{Tool: "lookup_order", Args: json.RawMessage(`{"order_id":"A1"}`), Caller: "support", TraceID: "ticket-1"})
			if err != nil || res.Receipt == (chain.Hash{}) {
				t.Fatalf("Call: %+v, %v", res, err)
			}
			if err := g.Close(); err != nil {
				t.Fatal(err)
			}
			if rep := verify(t, st, []ed25519.PublicKey{pub}); !rep.OK() {
				t.Fatalf("before the edit: %v", faults(rep))
			}
			st.Close()
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			if r, err := db.Exec(a.sql); err != nil {
				t.Fatal(err)
			} else if n, _ := r.RowsAffected(); n == 0 {
				t.Fatalf("%s: no row", a.sql)
			}
			db.Close()
			st, err = sqlitestore.Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			rep := verify(t, st, []ed25519.PublicKey{pub})
			var broken []string
			for _, tr := range rep.Traces {
				if tr.Break != nil && tr.Break.Fault == chain.FaultContent {
					broken = append(broken, tr.Head.Trace)
				}
			}
			if !slices.Contains(broken, a.trace) {
				t.Fatalf("content breaks in %v, want one in %s (faults %v)", broken, a.trace, faults(rep))
			}
		})
	}
}

// Erasing a trace's masked values destroys its key and changes no record:
// the store's history verifies as it did, under the same signed
// checkpoint.
func TestEraseBreaksNoChain(t *testing.T) {
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "bk.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	keys := mask.NewKeys()
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	g, err := toolgate.New(ctx, toolgate.Config{Kernel: kernel.Config{Store: st, Signer: priv, CheckpointEvery: -1}, MaskKeys: keys,
		Contracts: map[string][]string{"support": {"lookup_customer"}},
		Tools: []toolgate.Tool{{Name: "lookup_customer", Description: "Look up a customer.", ReadOnly: true, Result: "customer", Masked: []string{"email"},
			Parameters: json.RawMessage(`{"type":"object","properties":{"email":{"type":"string"}},"required":["email"]}`),
			Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
				return blackboard.Payload{"email": inv.Args["email"], "tier": "gold"}, nil
			}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Call(ctx, toolgate.Call{Tool: "lookup_customer", Args: json.RawMessage(`{"email":"ana@example.com"}`), Caller: "support", TraceID: "ticket-9"}); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	before := verify(t, st, []ed25519.PublicKey{pub})
	if err := keys.Erase(ctx, "", "ticket-9"); err != nil {
		t.Fatal(err)
	}
	after := verify(t, st, []ed25519.PublicKey{pub})
	if !before.OK() || !after.OK() || !slices.EqualFunc(before.Traces, after.Traces, func(a, b ledger.TraceResult) bool { return a.Head == b.Head }) {
		t.Fatalf("erasure changed the history: before %v, after %v", faults(before), faults(after))
	}
}
