package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blackboardkernel/bk/adapters/mcp"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/toolgate"
)

// A governed server shows the caller the tools of its contract, runs an
// allowed call and answers a refused one with a tool result the model can
// read: isError, the code and a hint.
func ExampleGovern() {
	ctx := context.Background()
	lookup := toolgate.Tool{Unscoped: true, Name: "lookup_order", Description: "Look up an order by id.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"}},"required":["order_id"]}`),
		Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
			return blackboard.Payload{"order_id": inv.Args["order_id"], "status": "shipped"}, nil
		}}
	wipe := toolgate.Tool{Unscoped: true, Name: "wipe_orders", Effect: func(context.Context, toolgate.Invocation) (blackboard.Payload, error) {
		return blackboard.Payload{}, nil
	}}
	g, err := toolgate.New(ctx, toolgate.Config{
		Tools:     []toolgate.Tool{lookup, wipe},
		Contracts: map[string][]string{"support": {"lookup_order"}},
	})
	if err != nil {
		panic(err)
	}
	defer g.Close()
	server := sdk.NewServer(&sdk.Implementation{Name: "support", Version: "v1"}, nil)
	if err := mcp.Govern(server, g, "support"); err != nil {
		panic(err)
	}

	st, ct := sdk.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		panic(err)
	}
	defer ss.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		panic(err)
	}
	defer cs.Close()

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		panic(err)
	}
	for _, t := range tools.Tools {
		fmt.Println("tool:", t.Name)
	}
	for _, name := range []string{"lookup_order", "wipe_orders"} {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: map[string]any{"order_id": "A1"}})
		if err != nil {
			panic(err)
		}
		fmt.Println(name, "isError:", res.IsError, res.Content[0].(*sdk.TextContent).Text)
	}
	// Output:
	// tool: lookup_order
	// lookup_order isError: false {"outcome":"executed","code":"EFFECT_SUCCEEDED","output":{"order_id":"A1","status":"shipped"}}
	// wipe_orders isError: true {"outcome":"refused","code":"TOOL_NOT_PERMITTED","root_cause":"TOOL_NOT_PERMITTED","hint":"This tool is not available to you. Do not call it again; use your own tools or hand the task back."}
}
