package replay_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/ledger"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/toolgate"
)

var (
	deskOnce sync.Once
	deskDir  string
	deskErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if deskDir != "" {
		os.RemoveAll(deskDir)
	}
	os.Exit(code)
}

const deskNS = "support_desk"

// deskDB returns a copy of a database written by go run
// ./examples/support_desk --db FILE --approver supervisor, the test's own
// to change.
func deskDB(t *testing.T) string {
	t.Helper()
	deskOnce.Do(func() {
		if deskDir, deskErr = os.MkdirTemp("", "replay-desk"); deskErr != nil {
			return
		}
		bin := filepath.Join(deskDir, "support_desk")
		if out, err := exec.Command("go", "build", "-o", bin, "github.com/blackboardkernel/bk/examples/support_desk").CombinedOutput(); err != nil {
			deskErr = errors.New("building examples/support_desk: " + err.Error() + "\n" + string(out))
			return
		}
		if out, err := exec.Command(bin, "--db", filepath.Join(deskDir, "desk.db"), "--approver", "supervisor").CombinedOutput(); err != nil {
			deskErr = errors.New("support_desk: " + err.Error() + "\n" + string(out))
		}
	})
	if deskErr != nil {
		t.Fatal(deskErr)
	}
	b, err := os.ReadFile(filepath.Join(deskDir, "desk.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "desk.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// crashedDeskDB returns a database of the support desk killed after its
// third effect call (the payment API paid a refund, its result not
// recorded), then run again: the supervisor recovers the refund.
func crashedDeskDB(t *testing.T) string {
	t.Helper()
	deskDB(t) // builds the binary
	path := filepath.Join(t.TempDir(), "crash.db")
	bin := filepath.Join(deskDir, "support_desk")
	if err := exec.Command(bin, "--db", path, "--approver", "supervisor", "--crash-after", "3").Run(); err == nil {
		t.Fatal("the desk did not crash")
	}
	if out, err := exec.Command(bin, "--db", path, "--approver", "supervisor").CombinedOutput(); err != nil {
		t.Fatalf("the desk after its crash: %v\n%s", err, out)
	} else if !strings.Contains(string(out), "The supervisor recovered") {
		t.Fatalf("nothing recovered:\n%s", out)
	}
	return path
}

// deskTraces lists the desk's conversation traces.
func deskTraces(t *testing.T, s store.Store) []string {
	t.Helper()
	var out []string
	for tr, err := range store.ListTraces(context.Background(), s, deskNS) {
		if err != nil {
			t.Fatal(err)
		}
		if !audit.IsPolicyTrace(tr.TraceID) && tr.TraceID != ledger.Trace {
			out = append(out, tr.TraceID)
		}
	}
	if len(out) == 0 {
		t.Fatal("the support desk's database holds no trace")
	}
	return out
}

// recordedDecisions reads a trace's decision records from the store
// itself, not through the replay.
func recordedDecisions(t *testing.T, s store.Store, trace string) []audit.Entry {
	t.Helper()
	var out []audit.Entry
	ns := ""
	for ts, err := range store.ListTraces(context.Background(), s, "") {
		if err == nil && ts.TraceID == trace {
			ns = ts.Namespace
		}
	}
	for rec, err := range s.ListTrace(context.Background(), ns, trace) {
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := audit.Of(rec); ok {
			out = append(out, d)
		}
	}
	return out
}

// shop is a small governed application over a memory store: a lookup
// that grounds a belief, and a charge that rests on it, masks the card,
// waits for approval above 100 and counts its effect calls.
type shop struct {
	s       *memstore.Store
	g       *toolgate.Gate
	effects int
	fail    bool // the next charge fails for good
}

func newShop(t testing.TB, validators ...kernel.Validator) *shop {
	t.Helper()
	return newShopOn(t, memstore.New(), validators...)
}

// newShopOn is newShop over the store s.
func newShopOn(t testing.TB, s *memstore.Store, validators ...kernel.Validator) *shop {
	t.Helper()
	sh := &shop{s: s}
	now := time.UnixMilli(1_700_000_000_000)
	lookup := toolgate.Tool{Name: "lookup", Result: "account", ReadOnly: true,
		Parameters: json.RawMessage(`{"type":"object","properties":{"account":{"type":"string"}},"required":["account"]}`),
		Derives:    []toolgate.Derive{{Belief: "chargeable", Value: "result.open", Fields: map[string]string{"account": "result.account"}}},
		Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
			sh.effects++
			return blackboard.Payload{"account": inv.Args["account"], "open": true}, nil
		}}
	charge := toolgate.Tool{Unscoped: true, Name: "charge", Result: "receipt", Requires: []string{"chargeable"},
		Parameters: json.RawMessage(`{"type":"object","properties":{"account":{"type":"string"},"card":{"type":"string","minLength":12},"amount":{"type":"number"}},"required":["account","card","amount"]}`),
		Bindings:   []toolgate.Binding{{Arg: "account", Percept: "account", Op: "equal"}},
		Masked:     []string{"card"},
		Approval:   "amount > 100",
		Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
			sh.effects++
			if sh.fail {
				sh.fail = false
				return nil, errors.New("card declined")
			}
			return blackboard.Payload{"charged": inv.Args["amount"]}, nil
		}}
	var err error
	sh.g, err = toolgate.New(context.Background(), toolgate.Config{
		Kernel: kernel.Config{Store: sh.s, Namespace: "shop", Clock: func() time.Time { return now },
			Validators: validators},
		Tools:     []toolgate.Tool{lookup, charge},
		MaskKey:   []byte("a test key of thirty-two bytes.."),
		Contracts: map[string][]string{"clerk": {"lookup", "charge"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sh.g.Close() })
	return sh
}

// callOf is a call of the shop's clerk in trace "bench".
func callOf(tool, args string) toolgate.Call {
	return toolgate.Call{Tool: tool, Args: json.RawMessage(args), Caller: "clerk", TraceID: "bench"}
}

// call makes one call and fails the test on an error.
func (sh *shop) call(t *testing.T, trace, tool, args string) toolgate.Result {
	t.Helper()
	res, err := sh.g.Call(context.Background(), toolgate.Call{Tool: tool, Args: json.RawMessage(args), Caller: "clerk", TraceID: trace})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// traffic records a trace of the shop: a lookup, a charge of 50, a
// declined charge on another account, and a charge of 500 on a third that
// a manager approves, which then runs.
func (sh *shop) traffic(t *testing.T, trace string) {
	t.Helper()
	ctx := context.Background()
	sh.call(t, trace, "lookup", `{"account":"acc-1"}`)
	if res := sh.call(t, trace, "charge", `{"account":"acc-1","card":"4111111111111111","amount":50}`); res.Code != reason.EffectSucceeded {
		t.Fatalf("charge of 50: %+v", res)
	}
	sh.call(t, trace, "lookup", `{"account":"acc-2"}`)
	sh.fail = true
	if res := sh.call(t, trace, "charge", `{"account":"acc-2","card":"4111111111111111","amount":60}`); res.Code != reason.EffectFailed {
		t.Fatalf("declined charge: %+v", res)
	}
	sh.call(t, trace, "lookup", `{"account":"acc-3"}`)
	const big = `{"account":"acc-3","card":"5500000000000004","amount":500}`
	res := sh.call(t, trace, "charge", big)
	if res.Outcome != audit.OutcomePendingApproval {
		t.Fatalf("charge of 500: %+v", res)
	}
	if _, err := sh.g.Approver("manager").Decide(ctx, audit.Approval{TraceID: trace, ActionID: res.ActionID, Digest: res.ArgsDigest, Decision: audit.Approved, Note: "ok"}); err != nil {
		t.Fatal(err)
	}
	if res, err := sh.g.Resume(ctx, trace, res.ActionID, json.RawMessage(big)); err != nil || res.Code != reason.EffectSucceeded {
		t.Fatalf("approved charge: %+v %v", res, err)
	}
}
