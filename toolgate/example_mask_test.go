package toolgate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/mask"
	"github.com/blackboardkernel/bk/toolgate"
)

// A tool masks the email it sends to: the effect gets the address, the
// store holds only its keyed hash, and the same address hashes the same.
func ExampleConfig_maskKey() {
	ctx := context.Background()
	send := toolgate.Tool{Unscoped: true,
		Name:       "send_receipt",
		Parameters: json.RawMessage(`{"type":"object","properties":{"email":{"type":"string"}},"required":["email"]}`),
		Masked:     []string{"email"},
		Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
			fmt.Println("effect sends to", inv.Args["email"])
			return blackboard.Payload{"sent": true}, nil
		},
	}
	key := []byte("an example key of 32 bytes......") // from a secret store, never the blackboard's
	g, err := toolgate.New(ctx, toolgate.Config{
		Tools:     []toolgate.Tool{send},
		MaskKey:   key,
		Contracts: map[string][]string{"mailer": {"send_receipt"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer g.Close()
	res, err := g.Call(ctx, toolgate.Call{Tool: "send_receipt", Args: json.RawMessage(`{"email":"ada@example.com"}`), Caller: "mailer", TraceID: "t1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	act, err := g.Kernel().Handle(blackboard.RoleTool, "reader").Get(ctx, res.ActionID)
	if err != nil {
		fmt.Println(err)
		return
	}
	stored, _ := act.Payload["email"].(string)
	want, _ := mask.Hash(key, "ada@example.com") // what an observer records for the same address
	fmt.Println(res.Code, strings.HasPrefix(stored, mask.Prefix), stored == want)
	// Output:
	// effect sends to ada@example.com
	// EFFECT_SUCCEEDED true true
}

// Each trace hashes its masked fields under its own key, kept in a key
// directory apart from the store. Erasing trace t1's key erases its masked
// values; t2 keeps working, and a new call in t1 fails closed.
func ExampleKeys_Erase() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "keys")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	ring, err := mask.OpenKeyDir(ctx, filepath.Join(dir, "keys"))
	if err != nil {
		fmt.Println(err)
		return
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
	g, err := toolgate.New(ctx, toolgate.Config{
		Tools:     []toolgate.Tool{send},
		MaskKeys:  ring,
		Contracts: map[string][]string{"mailer": {"send_receipt"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer g.Close()
	call := func(trace string) {
		res, err := g.Call(ctx, toolgate.Call{Tool: "send_receipt", Args: json.RawMessage(`{"email":"ada@example.com"}`), Caller: "mailer", TraceID: trace})
		switch {
		case errors.Is(err, mask.ErrErased):
			fmt.Println(trace, "erased")
		case err != nil:
			fmt.Println(err)
		default:
			fmt.Println(trace, res.Code)
		}
	}
	call("t1")
	call("t2")
	// The gate's kernel has no namespace of its own: the default one ("").
	// An observer masks a value for a trace with that trace's key.
	masked := func(trace string) string {
		k, err := ring.Key(ctx, "", trace)
		if err != nil {
			return err.Error()
		}
		m, _ := mask.Hash(k, "ada@example.com")
		return m
	}
	fmt.Println("same hash in both traces:", masked("t1") == masked("t2"))
	if err := ring.Erase(ctx, "", "t1"); err != nil {
		fmt.Println(err)
		return
	}
	call("t1")
	call("t2")
	// Output:
	// t1 EFFECT_SUCCEEDED
	// t2 EFFECT_SUCCEEDED
	// same hash in both traces: false
	// t1 erased
	// t2 EFFECT_SUCCEEDED
}
