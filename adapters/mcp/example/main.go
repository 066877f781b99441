// Command example runs a governed MCP server and a scripted client over
// in-memory transports (no network): a refund the model asks for too early
// is refused with a hint, the tool list grows once the refund is due, and
// the refund runs after the client's user approves it.
//
//	cd adapters/mcp && go run ./example
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blackboardkernel/bk/adapters/mcp"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/toolgate"
)

const trace = "ticket-7"

func main() {
	ctx := context.Background()
	g, err := toolgate.New(ctx, toolgate.WithTools(tools()...),
		toolgate.WithKernel(kernel.WithBeliefSpecs(kernel.BeliefSpec{Kind: "refund_due", DependsOn: []string{"order"}})),
		toolgate.WithContracts(toolgate.Contract{Name: "support", Tools: []string{"lookup_order", "issue_refund"}}))
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()

	server := sdk.NewServer(&sdk.Implementation{Name: "support", Version: "v1"}, nil)
	if err := mcp.Govern(server, g, "support", mcp.WithApprover("human:alice"),
		mcp.WithTrace(func(*sdk.ServerSession) string { return trace })); err != nil {
		log.Fatal(err)
	}
	st, ct := sdk.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ss.Close()
	// The client's user approves what the form shows, digest included.
	client := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "v1"}, &sdk.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			fmt.Println("asked:", req.Params.Message)
			a, _ := req.Params.Meta[mcp.MetaApproval].(map[string]any)
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true, "digest": a["digest"]}}, nil
		},
	})
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	list := func() {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			log.Fatal(err)
		}
		var names []string
		for _, t := range res.Tools {
			names = append(names, t.Name)
		}
		fmt.Println("tools:", names)
	}
	call := func(id, tool, args string) {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: json.RawMessage(args), Meta: sdk.Meta{mcp.MetaRetryKey: id}})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s isError=%v %s\n", tool, res.IsError, res.Content[0].(*sdk.TextContent).Text)
	}

	list()
	call("call_1", "issue_refund", `{"order_id":"A1","amount":700}`)
	call("call_2", "lookup_order", `{"order_id":"A1"}`)
	// The agent's planner concludes that the refund is due, on the order.
	if _, err := g.Kernel().Planner("analyst").Submit(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{kernel.KeyValue: true, kernel.KeyDependsOn: []string{"order"}}}); err != nil {
		log.Fatal(err)
	}
	list()
	call("call_3", "issue_refund", `{"order_id":"A1","amount":700}`)
	call("call_3", "issue_refund", `{"order_id":"A1","amount":700}`) // delivered twice: runs once
}

func tools() []toolgate.Tool {
	return []toolgate.Tool{
		{
			Name:        "lookup_order",
			Description: "Look up an order by id.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"}},"required":["order_id"]}`),
			Result:      "order",
			Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
				return blackboard.Payload{"order_id": inv.Args["order_id"], "amount": 700.0}, nil
			},
		},
		{
			Name:        "issue_refund",
			Description: "Refund an order.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"},"amount":{"type":"number"}},` +
				`"required":["order_id","amount"]}`),
			Requires: []string{"refund_due"},
			Bindings: []toolgate.Binding{
				{Arg: "order_id", Percept: "order", Op: toolgate.Equal},
				{Arg: "amount", Percept: "order", Op: toolgate.AtMost},
			},
			Once:     toolgate.OnceBy("order_id"),
			Result:   "refund",
			Approval: toolgate.ApprovalPolicy{When: "amount > 500"},
			Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
				fmt.Println("refund effect runs, key", inv.Key)
				return blackboard.Payload{"refund_id": "re_1", "amount": inv.Args["amount"]}, nil
			},
		},
	}
}
