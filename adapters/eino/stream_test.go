package eino_test

import (
	"testing"

	"github.com/cloudwego/eino/schema"

	"github.com/blackboardkernel/bk/toolgate/adaptertest"
)

// A streamed run is governed as an invoked one: the gate answers.
func TestStream(t *testing.T) {
	env := adaptertest.NewEnv(t)
	r := newRunner(t, env, asSuite(env))
	run, err := r.compile(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	msg := schema.AssistantMessage("", []schema.ToolCall{{ID: "x", Function: schema.FunctionCall{Name: adaptertest.Lookup, Arguments: `{"order_id":"A1"}`}}})
	sr, err := run.Stream(t.Context(), msg)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	out, err := sr.Recv()
	if err != nil || len(out) != 1 {
		t.Fatalf("streamed %v, %v", out, err)
	}
	rep, err := decode(out[0].Content)
	if err != nil || rep.Content.Outcome != "executed" || rep.Content.Output["order_id"] != "A1" {
		t.Fatalf("streamed reply %+v, %v", rep, err)
	}
}
