package ledger_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/chain"
	"github.com/blackboardkernel/bk/internal/pgtest"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/store/pgstore"
)

// The attacks a signed checkpoint catches, made with SQL on PostgreSQL:
// a trace dropped, a tail cut with its head rewritten, an old checkpoint
// replayed as the newest. It skips without BK_PG_DSN.
func TestVerifyPostgresAttacks(t *testing.T) {
	for _, a := range []struct {
		name string
		want chain.Fault
		sqls []string
	}{
		{"drop a whole trace", chain.FaultMissing, []string{`DELETE FROM %r WHERE trace_id = 'c'`, `DELETE FROM %t WHERE trace_id = 'c'`}},
		{"cut a tail and rewrite the head", chain.FaultTruncated, []string{
			`DELETE FROM %r WHERE id IN ('percepts:b:3', 'percepts:b:4')`,
			`UPDATE %t SET n = 2, events = 2, head = (SELECT link FROM %r WHERE id = 'percepts:b:2') WHERE trace_id = 'b'`}},
		{"replay an old checkpoint", chain.FaultCheckpoint, []string{
			// A copy of checkpoint 1 appended as the newest, linked properly.
			`INSERT INTO %r (id, trace_id, pos, slot, mode, kind, payload, role, writer, ts_ms, input_refs, confidence, ttl_ms, evidence_refs, status, reason, scope, namespace, span, link, link_seq)
			 SELECT 'evidence:bk.checkpoints:3', trace_id, 3, slot, mode, kind, payload, role, writer, ts_ms, input_refs, confidence, ttl_ms, evidence_refs, status, reason, scope, namespace, span, link, 2
			 FROM %r WHERE id = 'evidence:bk.checkpoints:1'`}},
	} {
		t.Run(a.name, func(t *testing.T) {
			ctx := context.Background()
			pool := pgtest.Pool(t)
			schema := pgtest.Schema(t)
			open := func() *pgstore.Store {
				st, err := pgstore.New(ctx, pool, pgstore.WithSchema(schema))
				if err != nil {
					t.Fatal(err)
				}
				return st
			}
			st := open()
			pub, priv, _ := ed25519.GenerateKey(rand.Reader)
			k, err := kernel.New(kernel.Config{Store: st, Signer: priv, CheckpointEvery: -1})
			if err != nil {
				t.Fatal(err)
			}
			h := k.Handle(blackboard.RoleTool, "crm")
			for round := range 2 { // two checkpoints
				for _, tr := range []string{"a", "b", "c"} {
					for i := range 2 {
						if _, err := h.Write(ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Percepts, Kind: "order", Payload: blackboard.Payload{"v": float64(round*2 + i)}}); err != nil {
							t.Fatal(err)
						}
					}
				}
				if _, err := k.Checkpoint(ctx); err != nil {
					t.Fatal(err)
				}
			}
			k.Close()
			if rep := verify(t, st, []ed25519.PublicKey{pub}); !rep.OK() {
				t.Fatalf("before the attack: %v", faults(rep))
			}
			st.Close()
			records, traces := pgx.Identifier{schema, "bk_records"}.Sanitize(), pgx.Identifier{schema, "bk_traces"}.Sanitize()
			for _, q := range a.sqls {
				q = strings.NewReplacer("%r", records, "%t", traces).Replace(q)
				if _, err := pool.Exec(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			st = open()
			defer st.Close()
			rep := verify(t, st, []ed25519.PublicKey{pub})
			if got := faults(rep); !slices.Contains(got, a.want) {
				t.Fatalf("faults %v, want %s", got, a.want)
			}
		})
	}
}
