package toolgate_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	otelcodes "go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/budget"
	"github.com/blackboardkernel/bk/internal/telemetry"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/toolgate"
)

func spanAttrs(s sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, a := range s.Attributes() {
		m[string(a.Key)] = a.Value.String()
	}
	return m
}

// TestToolCallSpans: "refund refused" links to the tool call that
// observed the stale order; a call under a framework's execute_tool span
// nests under it; metrics count calls, attempts and pending approvals.
func TestToolCallSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tools := []toolgate.Tool{
		{Unscoped: true, Name: "lookup_order", Parameters: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"}},"required":["order_id"]}`),
			Result: "order", ResultTTL: time.Minute,
			Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
				return blackboard.Payload{"order_id": inv.Args["order_id"], "amount": 700.0}, nil
			}},
		{Unscoped: true, Name: "issue_refund", Parameters: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"},"amount":{"type":"number"}},"required":["order_id","amount"]}`),
			Requires: []string{"refund_due"}, Bindings: orderBound, Result: "refund", Approval: "amount > 500",
			Effect: func(context.Context, toolgate.Invocation) (blackboard.Payload, error) {
				return blackboard.Payload{"refund_id": "re_1"}, nil
			}},
	}
	g, err := toolgate.New(context.Background(), toolgate.Config{
		Kernel: kernel.Config{
			TracerProvider: tp,
			MeterProvider:  mp,
			Clock:          func() time.Time { return now },
			BeliefSpecs:    []kernel.BeliefSpec{{Kind: "refund_due", DependsOn: []string{"order"}}},
		},
		Tools:     tools,
		Contracts: map[string][]string{"support": {"lookup_order", "issue_refund"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	k := g.Kernel()
	ctx := context.Background()
	call := func(ctx context.Context, id, tool, args string) toolgate.Result {
		res, err := g.Call(ctx, toolgate.Call{ID: id, Tool: tool, Args: json.RawMessage(args), Caller: "support", TraceID: "ticket-9"})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	call(ctx, "call_1", "lookup_order", `{"order_id":"A1"}`)
	if _, err := k.Proposer(blackboard.RolePlanner, "analyst").Submit(ctx, kernel.Entry{TraceID: "ticket-9", Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"order"}}}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Minute) // the order goes stale
	if res := call(ctx, "call_2", "issue_refund", `{"order_id":"A1","amount":700}`); res.Code != reason.StaleEvidence {
		t.Fatalf("refund: %+v", res)
	}
	// Under a framework's execute_tool span, the gate's own span nests.
	fctx, framework := tp.Tracer("framework").Start(ctx, "execute_tool lookup_order")
	call(fctx, "call_3", "lookup_order", `{"order_id":"A1"}`)
	framework.End()
	if _, err := k.Proposer(blackboard.RolePlanner, "analyst").Submit(ctx, kernel.Entry{TraceID: "ticket-9", Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"order"}}}); err != nil {
		t.Fatal(err)
	}
	if res := call(ctx, "call_4", "issue_refund", `{"order_id":"A1","amount":700}`); res.Outcome != audit.OutcomePendingApproval {
		t.Fatalf("second refund: %+v", res)
	}

	spans := rec.Ended()
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = s
	}
	find := func(name, callID string) sdktrace.ReadOnlySpan {
		for _, s := range spans {
			if s.Name() == name && spanAttrs(s)[telemetry.AttrGenAIToolCall] == callID {
				return s
			}
		}
		t.Fatalf("no span %q for %s", name, callID)
		return nil
	}
	lookup := find("execute_tool lookup_order", "call_1")
	if a := spanAttrs(lookup); a[telemetry.AttrGenAIOperation] != "execute_tool" || a[telemetry.AttrGenAIToolName] != "lookup_order" ||
		a[telemetry.AttrOutcome] != "executed" || lookup.Parent().IsValid() {
		t.Errorf("lookup span %v (parent %v)", a, lookup.Parent())
	}
	refund := find("execute_tool issue_refund", "call_2")
	if refund.Status().Code != otelcodes.Error || spanAttrs(refund)[telemetry.AttrCode] != "STALE_EVIDENCE" {
		t.Errorf("refused refund span %v %+v", spanAttrs(refund), refund.Status())
	}
	// The refund's decision span, a child of the call span, links to the
	// span that wrote the order percept, which nests under the lookup call.
	var decision sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == "kernel.submit" && s.Parent().SpanID() == refund.SpanContext().SpanID() {
			decision = s
		}
	}
	if decision == nil {
		t.Fatal("no decision span under the refund call")
	}
	jumped := false
	for _, l := range decision.Links() {
		for s := byID[l.SpanContext.SpanID()]; s != nil; s = byID[s.Parent().SpanID()] {
			if s.SpanContext().SpanID() == lookup.SpanContext().SpanID() {
				jumped = true
			}
		}
	}
	if !jumped {
		t.Errorf("the refused refund's decision does not link into the lookup call (links %+v)", decision.Links())
	}
	// The effect attempt span nests under the lookup call.
	var attempt sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == "toolgate.effect_attempt" && s.Parent().SpanID() == lookup.SpanContext().SpanID() {
			attempt = s
		}
	}
	if attempt == nil || spanAttrs(attempt)[telemetry.AttrAttempt] != "1" {
		t.Errorf("effect attempt span %v", attempt)
	}
	nested := find("execute_tool lookup_order", "call_3")
	if nested.Parent().SpanID() != framework.SpanContext().SpanID() || spanAttrs(nested)[telemetry.AttrGenAIOperation] != "execute_tool" {
		t.Errorf("the gate's span under a framework's execute_tool: %v", spanAttrs(nested))
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	sums := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					tool, _ := dp.Attributes.Value(telemetry.AttrGenAIToolName)
					outcome, _ := dp.Attributes.Value(telemetry.AttrOutcome)
					sums[m.Name+" "+tool.AsString()+" "+outcome.AsString()] += dp.Value
				}
			case metricdata.Gauge[int64]:
				for _, dp := range d.DataPoints {
					sums[m.Name] += dp.Value
				}
			}
		}
	}
	for key, want := range map[string]int64{
		"bk.tool_calls lookup_order executed":         2,
		"bk.tool_calls issue_refund refused":          1,
		"bk.tool_calls issue_refund pending_approval": 1,
		"bk.effect.attempts lookup_order ":            2,
		"bk.effect.outcomes lookup_order succeeded":   2,
		"bk.approvals.pending":                        1,
	} {
		if sums[key] != want {
			t.Errorf("%s = %d, want %d (all %v)", key, sums[key], want, sums)
		}
	}
}

// TestToolSpanUnderApplicationSpan: under an application's span (an agent
// turn), the gate starts its own execute_tool span as the span's child,
// with the GenAI attributes; the application's span is left as it was and
// the call's decision and effect nest under the gate's span.
func TestToolSpanUnderApplicationSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	lookup := toolgate.Tool{Unscoped: true, Name: "lookup_order", Parameters: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"}},"required":["order_id"]}`),
		Result: "order", Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
			return blackboard.Payload{"order_id": inv.Args["order_id"]}, nil
		}}
	g, err := toolgate.New(context.Background(), toolgate.Config{
		Kernel:    kernel.Config{TracerProvider: tp},
		Tools:     []toolgate.Tool{lookup},
		Contracts: map[string][]string{"support": {"lookup_order"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx, turn := tp.Tracer("app").Start(context.Background(), "agent turn")
	res, err := g.Call(ctx, toolgate.Call{ID: "call_1", Tool: "lookup_order", Args: json.RawMessage(`{"order_id":"A1"}`), Caller: "support", TraceID: "t"})
	turn.End()
	if err != nil || res.Outcome != audit.OutcomeExecuted {
		t.Fatalf("lookup: %+v %v", res, err)
	}
	var tool, app sdktrace.ReadOnlySpan
	children := map[trace.SpanID][]string{}
	for _, s := range rec.Ended() {
		children[s.Parent().SpanID()] = append(children[s.Parent().SpanID()], s.Name())
		switch s.Name() {
		case "execute_tool lookup_order":
			tool = s
		case "agent turn":
			app = s
		}
	}
	if tool == nil || app == nil {
		t.Fatalf("spans: tool %v, application %v", tool, app)
	}
	if tool.Parent().SpanID() != app.SpanContext().SpanID() || tool.SpanContext().SpanID() == app.SpanContext().SpanID() {
		t.Errorf("the tool span is not a child of the application's span: parent %v", tool.Parent())
	}
	a := spanAttrs(tool)
	if a[telemetry.AttrGenAIOperation] != "execute_tool" || a[telemetry.AttrGenAIToolName] != "lookup_order" || a[telemetry.AttrGenAIToolCall] != "call_1" {
		t.Errorf("tool span attributes %v", a)
	}
	if b := spanAttrs(app); b[telemetry.AttrGenAIOperation] != "" || b[telemetry.AttrGenAIToolName] != "" {
		t.Errorf("the gate wrote on the application's span: %v", b)
	}
	if got := children[app.SpanContext().SpanID()]; len(got) != 1 {
		t.Errorf("the application's span has children %v, want the tool span alone", got)
	}
	under := children[tool.SpanContext().SpanID()]
	if !slices.Contains(under, "toolgate.effect_attempt") || !slices.Contains(under, "kernel.submit") {
		t.Errorf("under the tool span: %v", under)
	}
}

// TestBudgetAndApprovalTelemetry: the call span carries the budget the
// call was checked against (bk.budget.*), its pressure is recorded, and an
// approval gets a span and is counted by decision.
func TestBudgetAndApprovalTelemetry(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	run, err := budget.New(budget.Limits{ToolCalls: 4}, "run-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	refund := toolgate.Tool{Unscoped: true, Name: "issue_refund", Parameters: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"number"}},"required":["amount"]}`),
		Approval: "amount > 500",
		Effect: func(context.Context, toolgate.Invocation) (blackboard.Payload, error) {
			return blackboard.Payload{"refund_id": "re_1"}, nil
		}}
	g, err := toolgate.New(context.Background(), toolgate.Config{
		Kernel:    kernel.Config{TracerProvider: tp, MeterProvider: mp},
		Tools:     []toolgate.Tool{refund},
		Budget:    run,
		Contracts: map[string][]string{"support": {"issue_refund"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx := context.Background()
	res, err := g.Call(ctx, toolgate.Call{ID: "call_1", Tool: "issue_refund", Args: json.RawMessage(`{"amount":700}`), Caller: "support", TraceID: "t"})
	if err != nil || res.Outcome != audit.OutcomePendingApproval {
		t.Fatalf("refund: %+v %v", res, err)
	}
	pending, err := g.Pending(ctx, "t")
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending %+v %v", pending, err)
	}
	if _, err := g.Approver("human:alice").Decide(ctx, audit.Approval{TraceID: "t", ActionID: pending[0].ActionID, Digest: pending[0].Digest, Decision: audit.Approved, Note: ""}); err != nil {
		t.Fatal(err)
	}
	var call, approve sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		switch s.Name() {
		case "execute_tool issue_refund":
			call = s
		case "toolgate.approve":
			approve = s
		}
	}
	if call == nil || approve == nil {
		t.Fatalf("spans: call %v, approve %v", call, approve)
	}
	if a := spanAttrs(call); a[telemetry.AttrBudgetPrefix+"run_id"] != "run-1" || a[telemetry.AttrBudgetPrefix+"limit.tool_calls"] != "4" ||
		a[telemetry.AttrBudgetPrefix+"used.tool_calls"] != "1" || a[telemetry.AttrBudgetPrefix+"pressure"] == "" {
		t.Errorf("call span %v", a)
	}
	if a := spanAttrs(approve); a["bk.approval.decision"] != "approved" || a[telemetry.AttrWriter] != "human:alice" || a[telemetry.AttrRecordID] == "" {
		t.Errorf("approve span %v", a)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	var approvals int64
	var pressures uint64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					if v, _ := dp.Attributes.Value("bk.approval.decision"); m.Name == "bk.approvals" && v.AsString() == "approved" {
						approvals += dp.Value
					}
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					if m.Name == "bk.budget.pressure" {
						pressures += dp.Count
					}
				}
			}
		}
	}
	if approvals != 1 || pressures != 1 {
		t.Errorf("approvals counted %d (want 1), pressure observations %d (want 1)", approvals, pressures)
	}
}
