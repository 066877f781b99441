package toolgate_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/rebuild"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/toolgate"
)

// The tools of the configuration tests: lookup_order records an order
// percept; issue_refund rests on refund_due and is bound to the order.
func configTools() (lookup, refund toolgate.Tool) {
	effect := func(context.Context, toolgate.Invocation) (blackboard.Payload, error) {
		return blackboard.Payload{}, nil
	}
	lookup = toolgate.Tool{Name: "lookup_order", ReadOnly: true, Result: "order", Effect: effect,
		Parameters: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"}},"required":["order_id"]}`)}
	refund = toolgate.Tool{Name: "issue_refund", Unscoped: true, Result: "refund", Effect: effect, Requires: []string{"refund_due"},
		Parameters: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"},"amount":{"type":"number"}},"required":["order_id","amount"]}`),
		Bindings:   []toolgate.Binding{{Arg: "order_id", Percept: "order", Op: "equal"}}}
	return lookup, refund
}

var refundDueSpec = []kernel.BeliefSpec{{Kind: "refund_due", DependsOn: []string{"order"}}}

// configErrors returns the *kernel.ConfigErrors err joins, failing the
// test for any other error.
func configErrors(t *testing.T, err error) []*kernel.ConfigError {
	t.Helper()
	var out []*kernel.ConfigError
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		var cerr *kernel.ConfigError
		if !errors.As(e, &cerr) {
			t.Fatalf("%v is not a *kernel.ConfigError", e)
		}
		out = append(out, cerr)
	}
	return out
}

// refused checks that New refuses cfg with exactly one problem, of tool's
// field (the Field text names both: `Tools["tool"].field`), wrapping
// blackboard.ErrInvalidInput, and that Validate says the same.
func refused(t *testing.T, cfg toolgate.Config, tool, field string) {
	t.Helper()
	g, err := toolgate.New(context.Background(), cfg)
	if err == nil {
		g.Close()
		t.Fatalf("New accepted the configuration; want %s of %q refused", field, tool)
	}
	if !errors.Is(err, blackboard.ErrInvalidInput) {
		t.Errorf("New: %v, want blackboard.ErrInvalidInput", err)
	}
	got := configErrors(t, err)
	if len(got) != 1 || !strings.Contains(got[0].Field, strconv.Quote(tool)) || !strings.HasSuffix(got[0].Field, "."+field) {
		t.Errorf("New: %v, want one problem of tool %q, field %s", err, tool, field)
	}
	if verr := cfg.Validate(); verr == nil || verr.Error() != err.Error() {
		t.Errorf("Validate: %v, want New's %v", verr, err)
	}
}

// accepted checks that New accepts cfg.
func accepted(t *testing.T, cfg toolgate.Config) {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	g, err := toolgate.New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	g.Close()
}

// A tool that requires a belief that nothing derives nor proposes can
// never be called: New refuses it, naming the tool and Requires. A belief
// is proposable when a tool derives it, or the kernel configuration gives
// it a belief spec, or reserves it to a governance writer; a reservation
// to no writer makes it proposable by no one, spec or not.
func TestNewRefusesUnproposableBelief(t *testing.T) {
	lookup, refund := configTools()
	base := toolgate.Config{Tools: []toolgate.Tool{lookup, refund}}
	refused(t, base, "issue_refund", "Requires[0]")

	noOne := base
	noOne.Kernel = kernel.Config{BeliefSpecs: refundDueSpec,
		Reserved: map[blackboard.Slot]map[string][]string{blackboard.Beliefs: {"refund_due": nil}}}
	refused(t, noOne, "issue_refund", "Requires[0]")

	withSpec := base
	withSpec.Kernel = kernel.Config{BeliefSpecs: refundDueSpec}
	accepted(t, withSpec)

	derived := base
	lookup.Derives = []toolgate.Derive{{Belief: "refund_due", Value: "true"}}
	derived.Tools = []toolgate.Tool{lookup, refund}
	accepted(t, derived)

	reserved := base
	reserved.Kernel = kernel.Config{Reserved: map[blackboard.Slot]map[string][]string{blackboard.Beliefs: {"refund_due": {"governance"}}}}
	refund.Unbound, refund.Bindings = true, nil // governance code chooses the belief's evidence: no percept kind is known
	reserved.Tools = []toolgate.Tool{base.Tools[0], refund}
	accepted(t, reserved)
}

// A binding on a percept kind that no belief of the tool rests on could
// never be checked, so every call would be refused ARGUMENT_NOT_BOUND:
// New refuses it, naming the tool and the binding's percept. A belief
// rests on its belief spec's kinds, a derived one on its tool's result
// kind.
func TestNewRefusesBindingOnUnrestedPercept(t *testing.T) {
	lookup, refund := configTools()
	refund.Bindings = append(refund.Bindings, toolgate.Binding{Arg: "amount", Percept: "invoice", Op: "at_most"})
	cfg := toolgate.Config{Kernel: kernel.Config{BeliefSpecs: refundDueSpec}, Tools: []toolgate.Tool{lookup, refund}}
	refused(t, cfg, "issue_refund", "Bindings[1].Percept")

	// Derived from lookup_order's result: the belief rests on "order" only.
	lookup.Derives = []toolgate.Derive{{Belief: "refund_due", Value: "true"}}
	refused(t, toolgate.Config{Tools: []toolgate.Tool{lookup, refund}}, "issue_refund", "Bindings[1].Percept")

	// The owner's spec for the derived belief adds the invoice.
	accepted(t, toolgate.Config{Tools: []toolgate.Tool{lookup, refund},
		Kernel: kernel.Config{BeliefSpecs: []kernel.BeliefSpec{{Kind: "refund_due", DependsOn: []string{"order", "invoice"}}}}})
}

// A derived belief that no tool requires, and no kernel action spec lists,
// is derived for nothing: New refuses it, naming the tool and the Derive.
func TestNewRefusesUnrequiredDerive(t *testing.T) {
	lookup, _ := configTools()
	lookup.Derives = []toolgate.Derive{{Belief: "refund_due", Value: "true"}}
	refused(t, toolgate.Config{Tools: []toolgate.Tool{lookup}}, "lookup_order", "Derives[0].Belief")

	accepted(t, toolgate.Config{Tools: []toolgate.Tool{lookup},
		Kernel: kernel.Config{ActionSpecs: []kernel.ActionSpec{{Type: "refund_by_hand", MinBeliefs: []string{"refund_due"}}}}})
}

// A once-key field the tool's schema does not declare would leave every
// call without its key (ONCE_KEY_MISSING): New refuses it, naming the tool
// and the field.
func TestNewRefusesOnceKeyFieldNotInSchema(t *testing.T) {
	lookup, refund := configTools()
	refund.Once = &kernel.OnceKey{Fields: []string{"order_id", "orderid"}}
	cfg := toolgate.Config{Kernel: kernel.Config{BeliefSpecs: refundDueSpec}, Tools: []toolgate.Tool{lookup, refund}}
	refused(t, cfg, "issue_refund", "Once.Fields[1]")

	refund.Once = &kernel.OnceKey{Fields: []string{"order_id"}}
	cfg.Tools = []toolgate.Tool{lookup, refund}
	accepted(t, cfg)
}

// New and Validate report every problem of a configuration at once, each
// naming its field, a tool's by the tool's name; a kernel problem names
// the kernel's field under Kernel.
func TestNewReportsEveryProblem(t *testing.T) {
	lookup, refund := configTools()
	lookup.Derives = []toolgate.Derive{{Belief: "customer_known", Value: "true"}}
	refund.Bindings = []toolgate.Binding{{Arg: "amount", Percept: "invoice", Op: "at_most"}}
	refund.Once = &kernel.OnceKey{Fields: []string{"orderid"}}
	credit := refund
	credit.Name, credit.Requires, credit.Once = "issue_credit", []string{"credit_due"}, nil
	cfg := toolgate.Config{
		Kernel:    kernel.Config{MinConfidence: 2},
		Tools:     []toolgate.Tool{lookup, refund, credit},
		Contracts: map[string][]string{"support": {"lookup_order", "cancel_order"}},
		Lease:     -time.Second,
		MaskKey:   []byte("short"),
	}
	err := cfg.Validate()
	var got []string
	for _, e := range configErrors(t, err) {
		got = append(got, e.Field)
	}
	want := []string{
		"Lease",
		"MaskKey",
		`Tools["issue_refund"].Once.Fields[0]`,
		"Kernel.MinConfidence",
		`Contracts["support"]`,
		`Tools["lookup_order"].Derives[0].Belief`,
		`Tools["issue_credit"].Requires[0]`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems %q, want %q", got, want)
	}
	if !errors.Is(err, blackboard.ErrInvalidInput) {
		t.Errorf("%v: want blackboard.ErrInvalidInput", err)
	}
	if first := strings.SplitN(err.Error(), "\n", 2)[0]; first != "config: Lease: -1s is negative" {
		t.Errorf("first problem reads %q", first)
	}
	if _, nerr := toolgate.New(context.Background(), cfg); nerr == nil || nerr.Error() != err.Error() {
		t.Errorf("New: %v, want Validate's %v", nerr, err)
	}
	if err := (toolgate.Config{}).Validate(); err != nil {
		t.Errorf("zero Config: %v", err)
	}
}

// The gate's reservations of its tools' kinds replace the owner's for the
// same kinds: an owner's reservation of a tool's action type to a writer
// of its own does not let that writer commit the tool's action.
func TestAttackOwnerReservationCannotTakeToolKind(t *testing.T) {
	ctx := context.Background()
	lookup, refund := configTools()
	g, err := toolgate.New(ctx, toolgate.Config{
		Kernel: kernel.Config{BeliefSpecs: refundDueSpec,
			Reserved: map[blackboard.Slot]map[string][]string{blackboard.Actions: {"issue_refund": {"mallory"}}}},
		Tools:     []toolgate.Tool{lookup, refund},
		Contracts: map[string][]string{"support": {"lookup_order", "issue_refund"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	_, err = g.Kernel().Governor().Submit(ctx, "mallory", kernel.Entry{TraceID: "t", Slot: blackboard.Actions, Kind: "issue_refund",
		Payload: blackboard.Payload{"order_id": "A1", "amount": 1.0, "requires_beliefs": []string{"refund_due"}}}, nil)
	if !errors.Is(err, blackboard.ErrPermission) {
		t.Errorf("the owner's writer submits the tool's action: %v, want PERMISSION_DENIED", err)
	}
}

// A gate rebuilt from a recorded policy (package replay) skips the checks
// of configurations that can never work: the snapshot does not record the
// kernel's belief specs. Validate still reports them.
func TestNewRebuildSkipsReachability(t *testing.T) {
	lookup, refund := configTools()
	cfg := toolgate.Config{Tools: []toolgate.Tool{lookup, refund}}
	if cfg.Validate() == nil {
		t.Fatal("Validate accepted a required belief nothing proposes")
	}
	g, err := toolgate.New(rebuild.Context(context.Background()), cfg)
	if err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	g.Close()
}
