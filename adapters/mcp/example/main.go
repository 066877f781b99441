// Command example runs a governed MCP server and a scripted client over
// in-memory transports (no network): a refund the model asks for too early
// is refused with a hint, the tool list grows once the order is looked up
// (its result grounds the refund), and the refund runs once after the
// client's user approves it, though the client delivers the call twice.
//
//	cd adapters/mcp && go run ./example
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blackboardkernel/bk/adapters/mcp"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/toolgate"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// The tools' arguments and results; the schemas the client is shown are
// generated from them.
type orderArgs struct {
	OrderID string `json:"order_id" jsonschema:"the order's id, e.g. A1"`
}

type order struct {
	OrderID string  `json:"order_id"`
	Amount  float64 `json:"amount"`
}

type refundArgs struct {
	OrderID string  `json:"order_id"`
	Amount  float64 `json:"amount" jsonschema:"in EUR, at most the order's amount"`
}

type refund struct {
	RefundID string  `json:"refund_id"`
	Amount   float64 `json:"amount"`
}

// run plays the scripted client against the governed server, printing
// what the client sees to w.
func run(ctx context.Context, w io.Writer) error {
	lookup := toolgate.Func(toolgate.Tool{ReadOnly: true, Name: "lookup_order", Description: "Look up an order by id.", Result: "order",
		// An order's result grounds the refund.
		Derives: []toolgate.Derive{{Belief: "refund_due", Value: "result.amount > 0.0"}},
	}, func(_ context.Context, _ toolgate.Invocation, a orderArgs) (order, error) {
		return order{OrderID: a.OrderID, Amount: 700}, nil
	})
	// The example records no request, so the refund waives its scope: an
	// application records the ticket's with toolgate.Gate.RecordRequest and
	// declares Scope: map[string]string{"order_id": "order"} instead.
	issue := toolgate.Func(toolgate.Tool{Unscoped: true, Name: "issue_refund", Description: "Refund an order.", Result: "refund",
		Requires: []string{"refund_due"},
		Bindings: []toolgate.Binding{{Arg: "order_id", Percept: "order", Op: "equal"}, {Arg: "amount", Percept: "order", Op: "at_most"}},
		Once:     &kernel.OnceKey{Fields: []string{"order_id"}}, Approval: "amount > 500",
	}, func(_ context.Context, inv toolgate.Invocation, a refundArgs) (refund, error) {
		fmt.Fprintln(w, "refund effect runs") // a real effect passes inv.Key to the payment API
		return refund{RefundID: "re_" + a.OrderID, Amount: a.Amount}, nil
	})
	g, err := toolgate.New(ctx, toolgate.Config{
		Tools:     []toolgate.Tool{lookup, issue},
		Contracts: map[string][]string{"support": {"lookup_order", "issue_refund"}},
	})
	if err != nil {
		return err
	}
	defer g.Close()

	server := sdk.NewServer(&sdk.Implementation{Name: "support", Version: "v1"}, nil)
	if err := mcp.Govern(server, g, "support", mcp.WithApprover("human:alice")); err != nil {
		return err
	}
	st, ct := sdk.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		return err
	}
	defer ss.Close()
	// The client's user approves what the form shows, digest included.
	client := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "v1"}, &sdk.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			a, _ := req.Params.Meta[mcp.MetaApproval].(map[string]any)
			fmt.Fprintln(w, "asked to approve:", a["tool"], a["args"])
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true, "digest": a["digest"]}}, nil
		},
	})
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		return err
	}
	defer cs.Close()

	list := func() error {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			return err
		}
		var names []string
		for _, t := range res.Tools {
			names = append(names, t.Name)
		}
		fmt.Fprintln(w, "tools:", names)
		return nil
	}
	call := func(id, tool, args string) error {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: json.RawMessage(args), Meta: sdk.Meta{mcp.MetaRetryKey: id}})
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s %s isError=%v %s\n", id, tool, res.IsError, res.Content[0].(*sdk.TextContent).Text)
		return nil
	}
	for _, step := range []func() error{
		list,
		func() error { return call("call_1", "issue_refund", `{"order_id":"A1","amount":700}`) }, // too early: refused
		func() error { return call("call_2", "lookup_order", `{"order_id":"A1"}`) },
		list, // the refund is grounded now
		func() error { return call("call_3", "issue_refund", `{"order_id":"A1","amount":700}`) },
		func() error { return call("call_3", "issue_refund", `{"order_id":"A1","amount":700}`) }, // delivered twice: runs once
	} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}
