package ledger_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"database/sql"
	"path/filepath"
	"slices"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/chain"
	"github.com/blackboardkernel/bk/internal/ledger"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/store/sqlitestore"
)

// sqliteScene writes three traces through a kernel with a signing key
// into a SQLite file and signs a checkpoint of them; it returns the
// file's path and the public key.
func sqliteScene(t *testing.T) (string, ed25519.PublicKey) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bk.db")
	st, err := sqlitestore.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	k, err := kernel.New(kernel.Config{Store: st, Signer: priv, CheckpointEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	h := k.Handle(blackboard.RoleTool, "crm")
	for _, tr := range []string{"a", "b", "c"} {
		for i := range 4 {
			if _, err := h.Write(t.Context(), kernel.Entry{TraceID: tr, Slot: blackboard.Percepts, Kind: "order", Payload: blackboard.Payload{"v": float64(i)}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := k.Close(); err != nil { // signs the checkpoint
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return path, pub
}

// The attacks on a SQLite file a signed checkpoint catches, made with
// SQL as someone who can write the file would, each named by Verify.
func TestVerifySQLiteAttacks(t *testing.T) {
	for _, a := range []struct {
		name  string
		want  chain.Fault
		sqls  []string
		clean bool // what the store alone cannot tell: verifies without the checkpoint's key
	}{
		{"drop a whole trace", chain.FaultMissing, []string{`DELETE FROM records WHERE trace_id = 'c'`, `DELETE FROM traces WHERE trace_id = 'c'`}, false},
		{"cut a tail and rewrite the head", chain.FaultTruncated, []string{
			`DELETE FROM records WHERE id IN ('percepts:b:3', 'percepts:b:4')`,
			`UPDATE traces SET n = 2, events = 2, head = (SELECT link FROM records WHERE id = 'percepts:b:2') WHERE trace_id = 'b'`}, false},
		{"drop the checkpoints", "", []string{`DELETE FROM records WHERE trace_id = 'bk.checkpoints'`, `DELETE FROM traces WHERE trace_id = 'bk.checkpoints'`,
			`DELETE FROM records WHERE trace_id = 'c'`, `DELETE FROM traces WHERE trace_id = 'c'`}, true},
	} {
		t.Run(a.name, func(t *testing.T) {
			path, pub := sqliteScene(t)
			db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)")
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range a.sqls {
				if _, err := db.Exec(q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			db.Close()
			st, err := sqlitestore.Open(t.Context(), path)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			rep := verify(t, st, []ed25519.PublicKey{pub})
			got := faults(rep)
			if a.clean {
				// Every checkpoint gone with the trace: the store alone
				// verifies; the one kept elsewhere does not.
				if !rep.OK() {
					t.Fatalf("faults %v: the store alone should verify", got)
				}
				return
			}
			if !slices.Contains(got, a.want) {
				t.Fatalf("faults %v, want %s", got, a.want)
			}
		})
	}
}

// A checkpoint kept outside the store (OnCheckpoint) catches the store
// whose checkpoints were all dropped with the trace they covered.
func TestVerifySQLiteTrustedCheckpoint(t *testing.T) {
	path, pub := sqliteScene(t)
	st, err := sqlitestore.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	var kept chain.Checkpoint
	for r, err := range st.ListTrace(t.Context(), "", ledger.Trace) {
		if err != nil {
			t.Fatal(err)
		}
		if kept, err = ledger.Decode(r); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DELETE FROM records WHERE trace_id IN ('bk.checkpoints', 'c')`, `DELETE FROM traces WHERE trace_id IN ('bk.checkpoints', 'c')`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	st, err = sqlitestore.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rep := verify(t, st, []ed25519.PublicKey{pub}, kept)
	if got := faults(rep); !slices.Contains(got, chain.FaultCheckpoint) {
		t.Fatalf("faults %v, want the trusted checkpoint missing", got)
	}
}
