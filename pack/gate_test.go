package pack_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/internal/snapshot"
	"github.com/blackboardkernel/bk/pack"
	"github.com/blackboardkernel/bk/rules"
	"github.com/blackboardkernel/bk/toolgate"
)

// fakeGate is a gate's governance as data: the controls of every trace
// and a policy snapshot.
type fakeGate struct {
	ctl toolgate.Controls
	pol snapshot.Policy
	err error
}

func (g fakeGate) Controls(context.Context, string) (toolgate.Controls, error) { return g.ctl, g.err }
func (g fakeGate) Policy() audit.Policy                                        { return g.pol.Encode() }

// deskPolicy: lookup_order reads (no requires), refund pays (requires a
// belief, bound to the order, once per order, approval above 100), and a
// rule bounds the refund.
func deskPolicy() snapshot.Policy {
	return snapshot.Policy{
		Tools: []snapshot.Tool{
			{Name: "lookup_order", Action: "lookup_order", Result: "order", ReadOnly: true},
			{Name: "refund", Action: "refund", Result: "refund", Requires: []string{"refund_eligible"},
				Bindings: []snapshot.Binding{{Arg: "order_id", Percept: "order", Op: "equal"}},
				Once:     &snapshot.Once{Fields: []string{"order_id"}, Limit: 1},
				Approval: &snapshot.Approval{When: "amount > 100"}},
		},
		Rules: []rules.Spec{{Name: "within_order", On: rules.TargetAction, Target: "refund", Expr: "action.amount <= percepts.order.amount"}},
	}
}

func deskTools() []toolgate.Spec {
	return []toolgate.Spec{{Name: "lookup_order", Description: "Read an order."}, {Name: "refund", Description: "Refund an order."},
		{Name: "wipe_account", Description: "A tool the snapshot does not list."}}
}

// Govern shows the policy in force: the snapshot's hash, its rules and
// each tool's governance, the tools that need an approval and the
// trace's prohibitions; the mode is the trace's.
func TestGovern(t *testing.T) {
	clk := &clock{t0}
	k := desk(t, clk)
	g := fakeGate{ctl: toolgate.Controls{Prohibited: []string{"lookup_order"}}, pol: deskPolicy()}
	r, in := run(), pack.Input{Mission: "Refund late orders.", Tools: deskTools(), Policy: pack.PolicySummary{Rules: []string{"the caller's own"}}}
	r.ReadOnly = true // Govern reads the mode from the controls
	if err := pack.GovernWith(context.Background(), g, &r, &in); err != nil {
		t.Fatal(err)
	}
	if r.ReadOnly || in.Policy.Hash != g.pol.Encode().Hash {
		t.Errorf("read-only %v, hash %q; want normal and %q", r.ReadOnly, in.Policy.Hash, g.pol.Encode().Hash)
	}
	wantRules := []string{"the caller's own", "within_order (on action refund): action.amount <= percepts.order.amount",
		"tool refund: requires the beliefs refund_eligible; order_id equal the observed order.order_id; once per order_id; needs an approval when amount > 100"}
	if !slices.Equal(in.Policy.Rules, wantRules) {
		t.Errorf("rules %q, want %q", in.Policy.Rules, wantRules)
	}
	if !slices.Equal(in.Policy.Approval, []string{"refund"}) || !slices.Equal(in.Policy.Prohibited, []string{"lookup_order"}) {
		t.Errorf("approval %v, prohibited %v", in.Policy.Approval, in.Policy.Prohibited)
	}
	p, err := compiler(t, clk).Compile(context.Background(), k.Reader(), r, in)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Manifest.Tools, []string{"refund", "wipe_account"}) || p.Policy != g.pol.Encode().Hash {
		t.Errorf("tools shown %v, policy %q", p.Manifest.Tools, p.Policy)
	}
	if !strings.Contains(p.Prompt, "- rule: tool refund: requires the beliefs refund_eligible") {
		t.Errorf("the prompt does not show the tool's governance:\n%s", p.Prompt)
	}
}

// TestAttackReadOnlyToolShown: in a read_only trace no tool with an
// effect is shown, even when the caller passes it: neither one the
// snapshot does not say is read-only nor one it does not know; each is a cut.
// The read-only tool stays.
func TestAttackReadOnlyToolShown(t *testing.T) {
	clk := &clock{t0}
	k := desk(t, clk)
	g := fakeGate{ctl: toolgate.Controls{ReadOnly: true}, pol: deskPolicy()}
	r, in := run(), pack.Input{Mission: "Refund late orders.", Tools: deskTools()}
	if err := pack.GovernWith(context.Background(), g, &r, &in); err != nil {
		t.Fatal(err)
	}
	p, err := compiler(t, clk).Compile(context.Background(), k.Reader(), r, in)
	if err != nil {
		t.Fatal(err)
	}
	if p.Mode != "read_only" || p.Manifest.Controls().Mode != "read_only" {
		t.Errorf("mode %q, controls %q", p.Mode, p.Manifest.Controls().Mode)
	}
	if !slices.Equal(p.Manifest.Tools, []string{"lookup_order"}) {
		t.Errorf("tools shown in a read_only trace: %v, want [lookup_order]", p.Manifest.Tools)
	}
	for _, name := range []string{"refund", "wipe_account"} {
		if strings.Contains(p.Prompt, "- "+name+":") {
			t.Errorf("%s is shown in a read_only trace", name)
		}
		if !slices.Contains(p.Manifest.Cuts(), pack.Cut{Section: pack.SectionTools, Item: name, Reason: pack.ReasonProhibited}) {
			t.Errorf("%s is not in the cuts", name)
		}
	}
}

// A gate that cannot read the controls stops the compile; a nil gate or
// no trace is ErrInvalid, and nothing is changed.
func TestGovernErrors(t *testing.T) {
	boom := errors.New("store down")
	r, in := run(), pack.Input{Mission: "m"}
	if err := pack.GovernWith(context.Background(), fakeGate{err: boom}, &r, &in); !errors.Is(err, boom) {
		t.Errorf("controls error: %v", err)
	}
	if err := pack.Govern(context.Background(), nil, &r, &in); !errors.Is(err, pack.ErrInvalid) {
		t.Errorf("nil gate: %v", err)
	}
	r.TraceID = ""
	if err := pack.GovernWith(context.Background(), fakeGate{pol: deskPolicy()}, &r, &in); !errors.Is(err, pack.ErrInvalid) {
		t.Errorf("no trace: %v", err)
	}
	if r.ReadOnly || in.Policy.Hash != "" {
		t.Errorf("a failed Govern changed the run or the input: %+v %+v", r, in.Policy)
	}
}
