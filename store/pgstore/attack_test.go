package pgstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/toolgate"
)

// Another application sharing a PostgreSQL store writes one record into a
// namespace's policy trace before that namespace's gate first starts: the
// write is refused (the trace is reserved to the namespace it names), and
// the gate still starts and runs a call (see toolgate's test of the same
// name for the other stores).
func TestAttackPolicyTraceTaken(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	squatter, err := kernel.New(kernel.WithStore(s), kernel.WithNamespace("squatter"))
	if err != nil {
		t.Fatal(err)
	}
	defer squatter.Close()
	for _, victim := range []string{"desk", ""} {
		trace := toolgate.PolicyTrace(victim)
		_, err := squatter.Tool("squat").Write(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Percepts, Kind: "squat", Payload: blackboard.Payload{"x": true}})
		if !errors.Is(err, blackboard.ErrPermission) || kernel.CodeOf(err) != blackboard.CodePermissionDenied {
			t.Errorf("namespace %q: a squatter's write into %s: %v, want PERMISSION_DENIED", victim, trace, err)
		}
		kopts := []kernel.Option{kernel.WithStore(s)}
		if victim != "" {
			kopts = append(kopts, kernel.WithNamespace(victim))
		}
		g, err := toolgate.New(ctx, toolgate.WithKernel(kopts...), toolgate.WithContracts(toolgate.Contract{Name: "support", Tools: []string{"lookup_order"}}),
			toolgate.WithTools(toolgate.Tool{Name: "lookup_order", Result: "order", ReadOnly: true,
				Effect: func(context.Context, toolgate.Invocation) (blackboard.Payload, error) {
					return blackboard.Payload{"status": "shipped"}, nil
				}}))
		if err != nil {
			t.Fatalf("namespace %q: the gate does not start after a squatter wrote into its policy trace: %v", victim, err)
		}
		res, err := g.Call(ctx, toolgate.Call{Tool: "lookup_order", Args: []byte(`{}`), Caller: "support", TraceID: "ticket-of-" + blackboard.NamespaceOf(victim)})
		if err != nil || res.Outcome != audit.OutcomeExecuted {
			t.Errorf("namespace %q: call %+v %v, want executed", victim, res, err)
		}
		_ = g.Close()
	}
}

// Two applications share a PostgreSQL store and both name a ticket's trace
// "T1": their calls interleave, and each completes in a trace of its own,
// with only its own records in it (see toolgate's test of the same name
// for the other stores).
func TestAttackSameTraceTwoNamespaces(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	apps := []string{"desk", "billing"}
	gates := map[string]*toolgate.Gate{}
	for _, ns := range apps {
		g, err := toolgate.New(ctx, toolgate.WithKernel(kernel.WithStore(s), kernel.WithNamespace(ns)),
			toolgate.WithContracts(toolgate.Contract{Name: "support", Tools: []string{"lookup_order"}}),
			toolgate.WithTools(toolgate.Tool{Name: "lookup_order", Result: "order", ReadOnly: true,
				Effect: func(context.Context, toolgate.Invocation) (blackboard.Payload, error) {
					return blackboard.Payload{"app": ns}, nil
				}}))
		if err != nil {
			t.Fatalf("gate of %s: %v", ns, err)
		}
		defer g.Close()
		gates[ns] = g
	}
	for round := range 3 {
		for _, ns := range apps {
			res, err := gates[ns].Call(ctx, toolgate.Call{Tool: "lookup_order", Args: []byte(`{}`), Caller: "support", TraceID: "T1"})
			if err != nil || res.Outcome != audit.OutcomeExecuted || res.Output["app"] != ns {
				t.Fatalf("round %d: %s's call in T1: %+v %v, want executed with its own output", round, ns, res, err)
			}
		}
	}
	for _, ns := range apps {
		n := 0
		for r, err := range s.ListTrace(ctx, ns, "T1") {
			if err != nil {
				t.Fatal(err)
			}
			if r.Namespace != ns {
				t.Errorf("%s's trace T1 holds %s of namespace %q", ns, r.ID, r.Namespace)
			}
			if r.Slot == blackboard.Percepts && r.Kind == "order" {
				n++
			}
		}
		if n != 3 {
			t.Errorf("%s's trace T1 holds %d results, want its 3", ns, n)
		}
	}
}
