package inspect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/inspect"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/sqlitestore"
	"github.com/blackboardkernel/bk/toolgate"
)

// deskApp is the application side of an approval: the support desk's gate
// over a store, counting the refunds its effect pays.
func deskApp(t *testing.T, s store.Store, refunds *atomic.Int32) *toolgate.Gate {
	t.Helper()
	tools := deskTools()
	pay := tools[1].Effect
	tools[1].Effect = func(ctx context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
		refunds.Add(1)
		return pay(ctx, inv)
	}
	g, err := toolgate.New(context.Background(), toolgate.Config{
		Kernel: kernel.Config{
			Store:       s,
			Namespace:   "desk",
			BeliefSpecs: []kernel.BeliefSpec{{Kind: "refund_due", DependsOn: []string{"order"}}},
		},
		Tools:     tools,
		Contracts: map[string][]string{"support": {"lookup_order", "issue_refund"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// pendingRefund plays a ticket up to a refund of 700 waiting for approval
// (proposed by the caller "support") and returns it.
func pendingRefund(t *testing.T, g *toolgate.Gate, trace string) audit.Pending {
	t.Helper()
	ctx := context.Background()
	call := func(tool, args string) toolgate.Result {
		res, err := g.Call(ctx, toolgate.Call{ID: "c-" + tool, Tool: tool, Args: json.RawMessage(args), Caller: "support", TraceID: trace})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	call("lookup_order", `{"order_id":"A1"}`)
	if _, err := g.Kernel().Proposer(blackboard.RolePlanner, "analyst").Submit(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"order"}}}); err != nil {
		t.Fatal(err)
	}
	if res := call("issue_refund", `{"order_id":"A1","amount":700}`); res.Outcome != audit.OutcomePendingApproval {
		t.Fatalf("refund: %+v", res)
	}
	pending, err := g.Pending(ctx, trace)
	if err != nil || len(pending) != 1 {
		t.Fatal(pending, err)
	}
	return pending[0]
}

// pendingDesk writes a SQLite store whose refund waits for approval, with
// the application stopped, and returns the file and the refund.
func pendingDesk(t *testing.T) (string, audit.Pending) {
	t.Helper()
	db := filepath.Join(t.TempDir(), "desk.db")
	s, err := sqlitestore.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	g := deskApp(t, s, new(atomic.Int32))
	defer g.Close()
	return db, pendingRefund(t, g, "ticket-1")
}

// resume reopens the application on the SQLite file and executes the
// action, as an application does when it resumes.
func resume(t *testing.T, db, actionID string, refunds *atomic.Int32) toolgate.Result {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	res, err := deskApp(t, s, refunds).Execute(context.Background(), actionID)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// records counts the store's records, through bk export.
func records(t *testing.T, store ...string) int {
	t.Helper()
	return strings.Count(mustBK(t, append(store, "export")...), "\n")
}

// TestApprove: bk approve binds the action and its digest as the gate's
// Approver does: a wrong digest, the proposer (by its writer or by its
// caller name) and a bad command line are refused with nothing written;
// the approval lets the application's gate execute the refund exactly
// once; a second approval of the same action is refused.
func TestApprove(t *testing.T) {
	db, p := pendingDesk(t)
	var listed []inspect.PendingApproval
	if err := json.Unmarshal([]byte(mustBK(t, "--db", db, "approvals", "--json")), &listed); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0].ActionID != p.ActionID || listed[0].Digest != p.Digest {
		t.Fatalf("bk approvals %+v, want %s with digest %s", listed, p.ActionID, p.Digest)
	}
	if text := mustBK(t, "--db", db, "approvals"); !strings.Contains(text, p.Digest) {
		t.Errorf("bk approvals does not show the digest:\n%s", text)
	}
	before := records(t, "--db", db)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--as", "human:bob", "--digest", strings.Repeat("0", len(p.Digest))}, inspect.ExitError, "digest does not match"},
		{[]string{"--as", audit.CallerWriter("support"), "--digest", p.Digest}, inspect.ExitError, "cannot decide an action it proposed"},
		{[]string{"--digest", p.Digest}, inspect.ExitUsage, "--as NAME is required"},
		{[]string{"--as", "human:bob"}, inspect.ExitUsage, "--digest D is required"},
		{[]string{"--as", "human:bob", "--digest", p.Digest, "--ttl", "0s"}, inspect.ExitUsage, "--ttl 0s outside"},
		{[]string{"--as", "human:bob", "--digest", p.Digest, "--ttl", "721h"}, inspect.ExitUsage, "outside"},
	} {
		code, out, errOut := bk(t, append([]string{"--db", db, "approve", p.ActionID}, c.args...)...)
		if code != c.code || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("bk approve %q: exit %d (want %d)\nstdout %q\nstderr %q", c.args, code, c.code, out, errOut)
		}
	}
	if n := records(t, "--db", db); n != before {
		t.Fatalf("refused approvals wrote %d records", n-before)
	}

	var d inspect.Decided
	out := mustBK(t, "--db", db, "approve", p.ActionID, "--as", "human:bob", "--digest", p.Digest, "--note", "checked the order", "--json")
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	if d.Decision != string(audit.Approved) || d.ActionID != p.ActionID || d.TraceID != "ticket-1" || d.Namespace != "desk" || d.Approver != "human:bob" || d.Record == "" {
		t.Errorf("decided %+v", d)
	}
	// Without --ttl the approval is valid for DefaultApprovalTTL.
	if left := time.Until(time.UnixMilli(d.ExpiresMS)); left < inspect.DefaultApprovalTTL-time.Minute || left > inspect.DefaultApprovalTTL {
		t.Errorf("the approval expires in %v, want %v", left, inspect.DefaultApprovalTTL)
	}
	if n := records(t, "--db", db); n != before+1 {
		t.Errorf("an approval wrote %d records, want 1", n-before)
	}
	// Decided once: the action no longer waits.
	code, _, errOut := bk(t, "--db", db, "approve", p.ActionID, "--as", "human:carol", "--digest", p.Digest)
	if code != inspect.ExitError || !strings.Contains(errOut, "not an action waiting for approval") {
		t.Errorf("a second approval: exit %d: %s", code, errOut)
	}

	var refunds atomic.Int32
	res := resume(t, db, p.ActionID, &refunds)
	if res.Outcome != audit.OutcomeExecuted || res.ActionID != p.ActionID {
		t.Errorf("execute after bk approve: %+v", res)
	}
	if again := resume(t, db, p.ActionID, &refunds); again.Outcome != audit.OutcomeExecuted {
		t.Errorf("execute again: %+v", again)
	}
	if n := refunds.Load(); n != 1 {
		t.Errorf("the refund was paid %d times, want once", n)
	}
	if text := mustBK(t, "--db", db, "timeline", "ticket-1"); !strings.Contains(text, "approval: approved by human:bob") {
		t.Errorf("timeline:\n%s", text)
	}
}

// TestDeny: bk deny sends the refund to the gate's safe fallback when the
// application resumes; nothing is paid.
func TestDeny(t *testing.T) {
	db, p := pendingDesk(t)
	out := mustBK(t, "--db", db, "deny", p.ActionID, "--as", "human:bob", "--digest", p.Digest, "--note", "duplicate ticket")
	if !strings.HasPrefix(out, "denied "+p.ActionID) || strings.Contains(out, "valid until") {
		t.Errorf("bk deny: %q (a denial stands: it has no validity)", out)
	}
	// The decision commands say they write; the others, that they read.
	for cmd, want := range map[string]string{"deny": "opened for writing", "approve": "opened for writing", "serve": "opened for writing", "traces": "opened read-only"} {
		if _, help, _ := bk(t, cmd, "-h"); !strings.Contains(help, want) {
			t.Errorf("bk %s -h does not say %q:\n%s", cmd, want, help)
		}
	}
	var refunds atomic.Int32
	res := resume(t, db, p.ActionID, &refunds)
	if res.Outcome != audit.OutcomeRefused || res.Code != reason.ApprovalDenied || res.FallbackID == "" {
		t.Errorf("execute after bk deny: %+v", res)
	}
	if n := refunds.Load(); n != 0 {
		t.Errorf("a denied refund was paid %d times", n)
	}
	s, err := sqlitestore.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if fb, err := s.Get(context.Background(), res.FallbackID); err != nil || fb.Kind != kernel.FallbackQueueForReview || fb.Mode != blackboard.ModeCommit {
		t.Errorf("the fallback %s: %+v %v", res.FallbackID, fb, err)
	}
}

// TestAttackApproveNotPending: bk approve refuses an action that does not
// wait for approval (a lookup the gate ran, a record that is no action, an
// id that names nothing) and writes nothing, although the gate's Approver
// alone would record an approval of any committed action.
func TestAttackApproveNotPending(t *testing.T) {
	db, _ := pendingDesk(t)
	var effects []inspect.EffectRow
	if err := json.Unmarshal([]byte(mustBK(t, "--db", db, "effects", "--json")), &effects); err != nil {
		t.Fatal(err)
	}
	if len(effects) != 1 || effects[0].Tool != "lookup_order" {
		t.Fatalf("effects %+v", effects)
	}
	lookup := effects[0].ActionID
	s, err := sqlitestore.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	act, err := s.Get(context.Background(), lookup)
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	digest, err := toolgate.ArgsDigest(act.Payload)
	if err != nil {
		t.Fatal(err)
	}
	before := records(t, "--db", db)
	for _, id := range []string{lookup, effects[0].Result, "actions:nothing:1"} {
		code, out, errOut := bk(t, "--db", db, "approve", id, "--as", "human:bob", "--digest", digest)
		if code != inspect.ExitError || out != "" || !strings.Contains(errOut, "not an action waiting for approval") {
			t.Errorf("bk approve %s: exit %d\nstdout %q\nstderr %q", id, code, out, errOut)
		}
	}
	if n := records(t, "--db", db); n != before {
		t.Errorf("refused approvals wrote %d records", n-before)
	}
}

// TestAttackApproveAsTheCaller: the gate records its caller "support" as
// the writer caller:support; bk approve --as support is that caller
// approving its own refund, and is refused with nothing written.
func TestAttackApproveAsTheCaller(t *testing.T) {
	db, p := pendingDesk(t)
	before := records(t, "--db", db)
	code, out, errOut := bk(t, "--db", db, "approve", p.ActionID, "--as", "support", "--digest", p.Digest)
	if code != inspect.ExitError || out != "" || !strings.Contains(errOut, "is the caller that proposed it") {
		t.Errorf("bk approve --as support: exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
	if n := records(t, "--db", db); n != before {
		t.Errorf("a refused approval wrote %d records", n-before)
	}
}

// TestStoreFlags: --db and --dsn name one store: both is a usage error, as
// are $BK_DB and $BK_DSN together; a flag wins over the variables; a
// PostgreSQL server that does not answer fails the command (exit 1).
func TestStoreFlags(t *testing.T) {
	db, _ := pendingDesk(t)
	code, _, errOut := bk(t, "--db", db, "--dsn", "postgres://127.0.0.1:1/bk", "traces")
	if code != inspect.ExitUsage || !strings.Contains(errOut, "not both") {
		t.Errorf("--db and --dsn: exit %d: %s", code, errOut)
	}
	t.Setenv("BK_DB", db)
	t.Setenv("BK_DSN", "postgres://127.0.0.1:1/bk?connect_timeout=2")
	if code, _, errOut := bk(t, "traces"); code != inspect.ExitUsage || !strings.Contains(errOut, "not both") {
		t.Errorf("$BK_DB and $BK_DSN: exit %d: %s", code, errOut)
	}
	mustBK(t, "--db", db, "traces")
	if code, _, errOut := bk(t, "--dsn", "postgres://nobody:secret@127.0.0.1:1/bk", "approve", "X"); code != inspect.ExitUsage || strings.Contains(errOut, "secret") {
		t.Errorf("a usage error after --dsn: exit %d, stderr shows the password:\n%s", code, errOut)
	}
	code, out, errOut := bk(t, "--dsn", "postgres://nobody:secret@127.0.0.1:1/bk?connect_timeout=2", "traces")
	if code != inspect.ExitError || out != "" || !strings.Contains(errOut, "PostgreSQL 127.0.0.1:1/bk") || strings.Contains(errOut, "secret") {
		t.Errorf("an unreachable server: exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
}

// TestReapprove: an approval that expired before the application used it
// leaves the refund waiting again: bk approvals lists it, and a new bk
// approve supersedes the expired one; the refund is paid once, and a
// decision after that is refused with nothing written.
func TestReapprove(t *testing.T) {
	db, p := pendingDesk(t)
	mustBK(t, "--db", db, "approve", p.ActionID, "--as", "human:bob", "--digest", p.Digest, "--ttl", "1ms")
	time.Sleep(20 * time.Millisecond)
	var listed []inspect.PendingApproval
	if err := json.Unmarshal([]byte(mustBK(t, "--db", db, "approvals", "--json")), &listed); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0].ActionID != p.ActionID {
		t.Fatalf("bk approvals after the approval expired: %+v, want %s", listed, p.ActionID)
	}
	mustBK(t, "--db", db, "approve", p.ActionID, "--as", "human:carol", "--digest", p.Digest, "--note", "still due")
	var refunds atomic.Int32
	if res := resume(t, db, p.ActionID, &refunds); res.Outcome != audit.OutcomeExecuted || refunds.Load() != 1 {
		t.Errorf("execute after the new approval: %+v, %d refunds", res, refunds.Load())
	}
	before := records(t, "--db", db)
	code, _, errOut := bk(t, "--db", db, "deny", p.ActionID, "--as", "human:dave", "--digest", p.Digest)
	if code != inspect.ExitError || !strings.Contains(errOut, "not an action waiting for approval") {
		t.Errorf("a denial after the refund was paid: exit %d: %s", code, errOut)
	}
	if n := records(t, "--db", db); n != before {
		t.Errorf("a refused denial wrote %d records", n-before)
	}
}

// TestApproveAtOnce: four people run bk approve or bk deny on one refund
// at the same moment, each its own command over the one SQLite file.
// One decision is recorded; every other command fails saying the action
// no longer waits, whether bk's own check or the gate's claim refused it.
func TestApproveAtOnce(t *testing.T) {
	db, p := pendingDesk(t)
	const n = 4
	codes := make([]int, n)
	errOuts := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		verb := []string{"approve", "deny"}[i%2]
		wg.Go(func() {
			codes[i], _, errOuts[i] = bk(t, "--db", db, verb, p.ActionID, "--as", fmt.Sprintf("human:%c", 'a'+i), "--digest", p.Digest)
		})
	}
	wg.Wait()
	ok := 0
	for i, code := range codes {
		switch {
		case code == inspect.ExitOK:
			ok++
		case code != inspect.ExitError || !strings.Contains(errOuts[i], "not an action waiting for approval"):
			t.Errorf("command %d: exit %d: %s", i, code, errOuts[i])
		}
	}
	s, err := sqlitestore.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	recorded := 0
	for r, err := range s.ListSlot(context.Background(), blackboard.Evidence, store.Filter{}) {
		if err != nil {
			t.Fatal(err)
		}
		if _, is := audit.ApprovalOf(r); is {
			recorded++
		}
	}
	if ok != 1 || recorded != 1 {
		t.Errorf("%d commands succeeded and %d decisions were recorded, want 1 and 1", ok, recorded)
	}
}

// The gate's policy trace is listed for what it holds, not as a trace of
// a run whose actions came to nothing.
func TestTracesNamePolicyTrace(t *testing.T) {
	db, _ := pendingDesk(t)
	out := mustBK(t, "--db", db, "traces")
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "bk.policy.") && !strings.Contains(line, "policy snapshots") {
			t.Errorf("bk traces lists the policy trace as %q", line)
		}
	}
	if !strings.Contains(out, "policy snapshots") {
		t.Errorf("bk traces:\n%s", out)
	}
}

// bk serve on every interface says so before it serves; on one address
// it says nothing of the kind.
func TestServeEveryInterfaceSaid(t *testing.T) {
	db, _ := pendingDesk(t)
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("0123456789abcdef0123456789abcdef human:ana\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for addr, warned := range map[string]bool{"0.0.0.0:0": true, "[::]:0": true, ":0": true, "127.0.0.1:0": false, "localhost:0": false} {
		var out, errOut bytes.Buffer
		served := false
		code := inspect.Main(context.Background(), []string{"--db", db, "serve", "--addr", addr, "--token-file", tokens}, &out, &errOut,
			inspect.WithServe(func(context.Context, inspect.ServeConfig) error { served = true; return nil }))
		if code != 0 || !served {
			t.Fatalf("bk serve --addr %s: exit %d, served %v: %s", addr, code, served, errOut.String())
		}
		if got := strings.Contains(out.String(), "every interface"); got != warned {
			t.Errorf("bk serve --addr %s: warned %v, want %v: %q", addr, got, warned, out.String())
		}
	}
}
