package toolgate_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/mask"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/toolgate"
)

// TestAttackMaskKeysAcrossNamespaces: two applications, in namespaces
// "desk" and "billing", share a store and one key directory, and both
// mask a field in a trace of the same id, T1. Their T1s are two traces:
// the same plain value masks differently in each (neither can compute the
// other's masked values), and erasing desk's T1 leaves billing's T1
// working, its masked values unchanged.
func TestAttackMaskKeysAcrossNamespaces(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	defer s.Close()
	ring, err := mask.OpenKeyDir(ctx, filepath.Join(t.TempDir(), "keys"))
	if err != nil {
		t.Fatal(err)
	}
	defer ring.Close()
	send := toolgate.Tool{Unscoped: true,
		Name:       "send_receipt",
		Parameters: json.RawMessage(`{"type":"object","properties":{"email":{"type":"string"}},"required":["email"]}`),
		Masked:     []string{"email"},
		Effect: func(context.Context, toolgate.Invocation) (blackboard.Payload, error) {
			return blackboard.Payload{"sent": true}, nil
		},
	}
	gate := func(ns string) *toolgate.Gate {
		g, err := toolgate.New(ctx, toolgate.Config{
			Kernel:    kernel.Config{Store: s, Namespace: ns},
			Tools:     []toolgate.Tool{send},
			MaskKeys:  ring,
			Contracts: map[string][]string{"mailer": {"send_receipt"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		return g
	}
	desk, billing := gate("desk"), gate("billing")
	const email = "ada@example.com"
	call := func(g *toolgate.Gate) error {
		_, err := g.Call(ctx, toolgate.Call{Tool: "send_receipt", Args: json.RawMessage(`{"email":"` + email + `"}`), Caller: "mailer", TraceID: "T1"})
		return err
	}
	for name, g := range map[string]*toolgate.Gate{"desk": desk, "billing": billing} {
		if err := call(g); err != nil {
			t.Fatalf("%s's call in T1: %v", name, err)
		}
	}
	// An observer masks as the gate does: with the trace's key in the
	// gate's kernel's namespace.
	maskIn := func(ns string) (string, error) {
		k, err := ring.Key(ctx, ns, "T1")
		if err != nil {
			return "", err
		}
		return mask.Hash(k, email)
	}
	deskMask, err := maskIn("desk")
	if err != nil {
		t.Fatal(err)
	}
	billingMask, err := maskIn("billing")
	if err != nil {
		t.Fatal(err)
	}
	for g, want := range map[*toolgate.Gate]string{desk: deskMask, billing: billingMask} {
		if got := storedEmail(t, g); got != want {
			t.Errorf("the gate stored %q, its namespace's key masks to %q", got, want)
		}
	}
	if deskMask == billingMask {
		t.Fatal("desk's and billing's T1 mask a value alike: they share a key, and each can compute the other's masked values")
	}
	if err := ring.Erase(ctx, "desk", "T1"); err != nil {
		t.Fatal(err)
	}
	if err := call(desk); !errors.Is(err, mask.ErrErased) {
		t.Errorf("desk's call in its erased T1: %v, want mask.ErrErased", err)
	}
	if err := call(billing); err != nil {
		t.Errorf("billing's call in T1 after desk's T1 was erased: %v", err)
	}
	if again, err := maskIn("billing"); err != nil || again != billingMask {
		t.Errorf("billing's T1 after desk's was erased masks to %q (%v), want %q unchanged", again, err, billingMask)
	}
}

// storedEmail is the email of the last send_receipt action g stored in
// trace T1: its masked form.
func storedEmail(t *testing.T, g *toolgate.Gate) string {
	t.Helper()
	var email string
	for r, err := range g.Kernel().Reader().Trace(context.Background(), "T1") {
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := r.Payload["email"].(string); ok && r.Slot == blackboard.Actions && r.Kind == "send_receipt" {
			email = s
		}
	}
	return email
}
