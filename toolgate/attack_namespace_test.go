package toolgate_test

import (
	"cmp"
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/pgtest"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/store/pgstore"
	"github.com/blackboardkernel/bk/store/sqlitestore"
	"github.com/blackboardkernel/bk/toolgate"
)

// Another application sharing the store writes one record into a
// namespace's policy trace before that namespace's gate first starts:
// the write is refused (the trace is reserved to the namespace it names),
// and the gate still starts, records its policy and runs a call. Without
// the reservation the squatter's record would make the trace another
// namespace's, and every gate of the victim's namespace would fail in New.
func TestAttackPolicyTraceTaken(t *testing.T) {
	for name, open := range namespaceStores {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			defer s.Close()
			attackPolicyTraceTaken(t, s)
		})
	}
}

// namespaceStores are the stores the namespace attacks run on: all three
// (PostgreSQL in a schema of its own, skipped without a server).
var namespaceStores = map[string]func(t *testing.T) store.Store{
	"pgstore": func(t *testing.T) store.Store {
		s, err := pgstore.New(t.Context(), pgtest.Pool(t), pgstore.WithSchema(pgtest.Schema(t)))
		if err != nil {
			t.Fatal(err)
		}
		return s
	},
	"memstore": func(*testing.T) store.Store { return memstore.New() },
	"sqlitestore": func(t *testing.T) store.Store {
		s, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "bk.db"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	},
}

// Two applications share a store and both name a ticket's trace "T1":
// their calls interleave, and each completes in a trace of its own (a
// trace is named by its namespace and id), with only its own records in
// it. Without that the second application's first call would fail, after
// the first had written output, on a trace of another namespace.
func TestAttackSameTraceTwoNamespaces(t *testing.T) {
	for name, open := range namespaceStores {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			defer s.Close()
			attackSameTraceTwoNamespaces(t, s)
		})
	}
}

// attackSameTraceTwoNamespaces runs the attack of
// [TestAttackSameTraceTwoNamespaces] on s.
func attackSameTraceTwoNamespaces(t *testing.T, s store.Store) {
	ctx := context.Background()
	apps := []string{"desk", "billing"}
	gates := map[string]*toolgate.Gate{}
	for _, ns := range apps {
		g, err := toolgate.New(ctx, toolgate.Config{
			Kernel:    kernel.Config{Store: s, Namespace: ns},
			Contracts: map[string][]string{"support": {"lookup_order"}},
			Tools: []toolgate.Tool{{Name: "lookup_order", Result: "order", ReadOnly: true,
				Effect: func(context.Context, toolgate.Invocation) (blackboard.Payload, error) {
					return blackboard.Payload{"app": ns}, nil
				}}},
		})
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
		for r, err := range gates[ns].Kernel().Reader().Trace(ctx, "T1") {
			if err != nil {
				t.Fatal(err)
			}
			if r.Namespace != ns || r.Provenance.TraceID != "T1" {
				t.Errorf("%s's trace T1 holds %s of namespace %q, trace %q", ns, r.ID, r.Namespace, r.Provenance.TraceID)
			}
			if r.Slot == blackboard.Percepts && r.Kind == "order" {
				if r.Payload["app"] != ns {
					t.Errorf("%s's trace T1 holds the other application's result %s", ns, r.ID)
				}
				n++
			}
		}
		if n != 3 {
			t.Errorf("%s's trace T1 holds %d results, want its 3", ns, n)
		}
	}
}

// attackPolicyTraceTaken runs the attack of [TestAttackPolicyTraceTaken]
// on s, for a named namespace and for the default one.
func attackPolicyTraceTaken(t *testing.T, s store.Store) {
	ctx := context.Background()
	squatter, err := kernel.New(kernel.Config{Store: s, Namespace: "squatter"})
	if err != nil {
		t.Fatal(err)
	}
	for _, victim := range []string{"desk", ""} {
		trace := audit.PolicyTrace(victim)
		_, err := squatter.Handle(blackboard.RoleTool, "squat").Write(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Percepts, Kind: "squat", Payload: blackboard.Payload{"x": true}})
		if !errors.Is(err, blackboard.ErrPermission) || kernel.CodeOf(err) != reason.PermissionDenied {
			t.Errorf("namespace %q: a squatter's write into %s: %v, want PERMISSION_DENIED", victim, trace, err)
		}
		g, err := toolgate.New(ctx, toolgate.Config{
			Kernel:    kernel.Config{Store: s, Namespace: victim},
			Contracts: map[string][]string{"support": {"lookup_order"}},
			Tools: []toolgate.Tool{{Name: "lookup_order", Result: "order", ReadOnly: true,
				Effect: func(context.Context, toolgate.Invocation) (blackboard.Payload, error) {
					return blackboard.Payload{"status": "shipped"}, nil
				}}},
		})
		if err != nil {
			t.Fatalf("namespace %q: the gate does not start after a squatter wrote into its policy trace: %v", victim, err)
		}
		res, err := g.Call(ctx, toolgate.Call{Tool: "lookup_order", Args: []byte(`{}`), Caller: "support", TraceID: "ticket-of-" + cmp.Or(victim, blackboard.DefaultNamespace)})
		if err != nil || res.Outcome != audit.OutcomeExecuted {
			t.Errorf("namespace %q: call %+v %v, want executed", victim, res, err)
		}
		// The victim's own kernel may write there: the trace is its own.
		if _, err := g.Kernel().Handle(blackboard.RoleTool, "own").Write(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Percepts, Kind: "own", Payload: blackboard.Payload{"x": true}}); err != nil {
			t.Errorf("namespace %q: its own write into %s: %v", victim, trace, err)
		}
		_ = g.Close()
	}
	_ = squatter.Close()
}
