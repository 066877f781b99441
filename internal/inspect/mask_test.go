package inspect_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/inspect"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/mask"
	"github.com/blackboardkernel/bk/store/sqlitestore"
	"github.com/blackboardkernel/bk/toolgate"
)

// TestMaskedValuesNotShown plays the desk with the order id masked
// (toolgate.Tool.Masked): a refund refused, a lookup, a refund waiting
// for approval. No bk command's output, text or JSON, holds the order id;
// bk export shows its masked form.
func TestMaskedValuesNotShown(t *testing.T) {
	const secret = "ORD-SECRET-4111"
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "desk.db")
	s, err := sqlitestore.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	tools := deskTools()
	for i := range tools {
		tools[i].Masked = []string{"order_id"}
	}
	g, err := toolgate.New(ctx, toolgate.Config{
		Kernel: kernel.Config{
			Store:       s,
			Namespace:   "desk",
			BeliefSpecs: []kernel.BeliefSpec{{Kind: "refund_due", DependsOn: []string{"order"}}},
		},
		Tools:     tools,
		MaskKey:   []byte("0123456789abcdef0123456789abcdef"),
		Contracts: map[string][]string{"support": {"lookup_order", "issue_refund"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	call := func(tool, args string) toolgate.Result {
		t.Helper()
		res, err := g.Call(ctx, toolgate.Call{Tool: tool, Args: json.RawMessage(args), Caller: "support", TraceID: "masked"})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	call("issue_refund", `{"order_id":"`+secret+`","amount":600}`)
	call("lookup_order", `{"order_id":"`+secret+`"}`)
	if _, err := g.Kernel().Proposer(blackboard.RolePlanner, "analyst").Submit(ctx, kernel.Entry{TraceID: "masked", Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"order"}}}); err != nil {
		t.Fatal(err)
	}
	wait := call("issue_refund", `{"order_id":"`+secret+`","amount":650}`)
	if wait.Outcome != audit.OutcomePendingApproval {
		t.Fatalf("refund: %+v", wait)
	}
	g.Close()
	s.Close()

	for _, cmd := range []string{"export"} {
		if out := mustBK(t, "--db", db, cmd); !strings.Contains(out, mask.Prefix) {
			t.Errorf("bk %s does not show the masked value:\n%s", cmd, out)
		}
	}
	for _, args := range [][]string{
		{"traces"}, {"timeline", "masked"}, {"timeline", "--steps", "masked"}, {"explain", wait.ActionID}, {"stats"}, {"approvals"}, {"effects"}, {"export"},
		{"--json", "approvals"}, {"--json", "timeline", "masked"}, {"--json", "explain", wait.ActionID},
	} {
		out := mustBK(t, append([]string{"--db", db}, args...)...)
		if strings.Contains(out, secret) {
			t.Errorf("bk %s shows the masked value:\n%s", strings.Join(args, " "), out)
		}
	}
}

// bk erase destroys one trace's key in the key directory: only for a
// trace the store holds, never making a directory, and without changing
// the store; the other trace keeps its key, and an application's open
// keyring sees the erasure at its next use.
func TestEraseCommand(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, keysPath := filepath.Join(dir, "desk.db"), filepath.Join(dir, "keys")
	s, err := sqlitestore.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := mask.OpenKeyDir(ctx, keysPath)
	if err != nil {
		t.Fatal(err)
	}
	tools := deskTools()
	for i := range tools {
		tools[i].Masked = []string{"order_id"}
	}
	g, err := toolgate.New(ctx, toolgate.Config{
		Kernel: kernel.Config{Store: s, Namespace: "desk",
			BeliefSpecs: []kernel.BeliefSpec{{Kind: "refund_due", DependsOn: []string{"order"}}}},
		Tools:     tools,
		MaskKeys:  ring,
		Contracts: map[string][]string{"support": {"lookup_order"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, trace := range []string{"A", "B"} {
		if _, err := g.Call(ctx, toolgate.Call{Tool: "lookup_order", Args: json.RawMessage(`{"order_id":"ORD-1"}`), Caller: "support", TraceID: trace}); err != nil {
			t.Fatal(err)
		}
	}
	keyB, err := ring.Key(ctx, "desk", "B")
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
	// Another application over the same store and key directory, in its
	// own namespace, with a trace of the same id: another trace, with its
	// own key, which erasing desk's A leaves alone.
	billing, err := toolgate.New(ctx, toolgate.Config{
		Kernel: kernel.Config{Store: s, Namespace: "billing",
			BeliefSpecs: []kernel.BeliefSpec{{Kind: "refund_due", DependsOn: []string{"order"}}}},
		Tools:     tools,
		MaskKeys:  ring,
		Contracts: map[string][]string{"support": {"lookup_order"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := billing.Call(ctx, toolgate.Call{Tool: "lookup_order", Args: json.RawMessage(`{"order_id":"ORD-1"}`), Caller: "support", TraceID: "A"}); err != nil {
		t.Fatal(err)
	}
	billingA, err := ring.Key(ctx, "billing", "A")
	if err != nil {
		t.Fatal(err)
	}
	billing.Close()
	s.Close()

	defer ring.Close() // the application's, open while bk erases
	before := mustBK(t, "--db", db, "export")
	files := readDir(t, keysPath)
	if code, _, _ := bk(t, "--db", db, "erase", "A"); code != inspect.ExitUsage {
		t.Errorf("erase without --keys: exit %d, want usage", code)
	}
	missing := filepath.Join(dir, "none")
	if code, _, _ := bk(t, "--db", db, "erase", "A", "--keys", missing); code != inspect.ExitError {
		t.Errorf("erase with a missing key directory: exit %d", code)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("erase created a key directory")
	}
	if code, _, _ := bk(t, "--db", db, "erase", "A", "--keys", db); code != inspect.ExitError {
		t.Errorf("erase with a file as the key directory: exit %d", code)
	}
	if code, _, _ := bk(t, "--db", db, "erase", "NOPE", "--keys", keysPath); code != inspect.ExitError {
		t.Errorf("erase of a trace the store does not hold: exit %d", code)
	}
	if code, _, _ := bk(t, "--db", db, "erase", "A", "--keys", keysPath); code != inspect.ExitError {
		t.Errorf("erase of a trace id two namespaces hold, without --namespace: exit %d", code)
	}
	if now := readDir(t, keysPath); !maps.Equal(now, files) {
		t.Error("a refused erase changed the key directory")
	}
	var got struct {
		TraceID   string `json:"trace_id"`
		Namespace string `json:"namespace"`
		Records   int    `json:"records"`
		Masked    int    `json:"masked_values"`
	}
	if err := json.Unmarshal([]byte(mustBK(t, "--db", db, "--namespace", "desk", "--json", "erase", "A", "--keys", keysPath)), &got); err != nil {
		t.Fatal(err)
	}
	if got.TraceID != "A" || got.Namespace != "desk" || got.Records == 0 || got.Masked == 0 {
		t.Errorf("bk erase printed %+v", got)
	}
	if after := mustBK(t, "--db", db, "export"); after != before {
		t.Error("bk erase changed the store")
	}
	reopened, err := mask.OpenKeyDir(ctx, keysPath)
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	for name, r := range map[string]*mask.Keys{"open": ring, "reopened": reopened} {
		if _, err := r.Key(ctx, "desk", "A"); !errors.Is(err, mask.ErrErased) {
			t.Errorf("A after bk erase (%s keyring): %v, want mask.ErrErased", name, err)
		}
		if k, err := r.Key(ctx, "desk", "B"); err != nil || string(k) != string(keyB) {
			t.Errorf("B after bk erase (%s keyring): %v, want its key unchanged", name, err)
		}
		if k, err := r.Key(ctx, "billing", "A"); err != nil || string(k) != string(billingA) {
			t.Errorf("billing's A after erasing desk's (%s keyring): %v, want its key unchanged", name, err)
		}
	}
}

// readDir is every file of dir with its contents.
func readDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}
