package kernel_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/blackboardkernel/bk/blackboard"
	bktel "github.com/blackboardkernel/bk/internal/telemetry"
	"github.com/blackboardkernel/bk/kernel"
)

// telemetry is a kernel wired to the SDK's in-memory recorders.
type telemetry struct {
	k      *kernel.Kernel
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
	logs   *bytes.Buffer
}

// newTelemetry builds a kernel whose telemetry the test reads; clock, when
// set, is its clock.
func newTelemetry(t *testing.T, clock func() time.Time) *telemetry {
	t.Helper()
	tel := &telemetry{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader(), logs: &bytes.Buffer{}}
	tel.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tel.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(tel.reader))
	t.Cleanup(func() { _ = tel.tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
	log := slog.New(slog.NewTextHandler(tel.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	k, err := kernel.New(kernel.Config{TracerProvider: tel.tp, MeterProvider: mp, Logger: log, Namespace: "shop", Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	tel.k = k
	return tel
}

func attrs(s sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, a := range s.Attributes() {
		m[string(a.Key)] = a.Value.String()
	}
	return m
}

// byRecord finds the ended span with that bk.record_id (and name).
func (tel *telemetry) byRecord(t *testing.T, name, id string) sdktrace.ReadOnlySpan {
	t.Helper()
	for _, s := range tel.spans.Ended() {
		if s.Name() == name && attrs(s)[bktel.AttrRecordID] == id {
			return s
		}
	}
	t.Fatalf("no %s span for %s", name, id)
	return nil
}

// TestDecisionSpans: every decision gets a span under the caller's, with
// the decision's attributes; a refusal sets the status; a decision links
// to the span that wrote the percept its evidence chain rests on.
func TestDecisionSpans(t *testing.T) {
	tel := newTelemetry(t, nil)
	ctx, root := tel.tp.Tracer("app").Start(context.Background(), "app.episode")
	tool, planner := tel.k.Handle(blackboard.RoleTool, "payment_tool"), tel.k.Proposer(blackboard.RolePlanner, "planner")

	// The paper's stale trace, the percept written under a tool call span.
	tctx, call := tel.tp.Tracer("app").Start(ctx, "execute_tool lookup_charge")
	percept, err := tool.Write(tctx, kernel.Entry{TraceID: "stale", Slot: blackboard.Percepts, Kind: "charge", Payload: blackboard.Payload{"stale": true}})
	call.End()
	if err != nil {
		t.Fatal(err)
	}
	belief, _ := planner.Submit(ctx, kernel.Entry{TraceID: "stale", Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"charge"}}})
	plan, _ := planner.Submit(ctx, kernel.Entry{TraceID: "stale", Slot: blackboard.Plans, Kind: "action_plan",
		Payload: blackboard.Payload{"steps": []any{map[string]any{"action": "issue_refund", "requires_beliefs": []string{"refund_due"}}}}})
	fb, err := tel.k.Governor().Submit(ctx, "planner", kernel.Entry{TraceID: "stale", Slot: blackboard.Actions, Kind: kernel.FallbackQueueForReview,
		Payload: blackboard.Payload{"reason": string(plan.Code)}}, nil)
	if err != nil || !fb.Committed() {
		t.Fatal(fb.Code, err)
	}
	if _, err := tel.k.Reader().View(ctx, "stale", false); err != nil {
		t.Fatal(err)
	}
	root.End()

	write := tel.byRecord(t, "kernel.write", "")
	if write.Parent().SpanID() != call.SpanContext().SpanID() {
		t.Errorf("the percept's write span is not a child of the tool call span")
	}
	if span := mustGet(t, tel.k.Reader(), percept).Provenance.Span; span != "00-"+write.SpanContext().TraceID().String()+"-"+write.SpanContext().SpanID().String()+"-01" {
		t.Errorf("the percept keeps span %q, not its write span", span)
	}

	bs := tel.byRecord(t, "kernel.submit", belief.ProposalID)
	a := attrs(bs)
	for key, want := range map[string]string{
		bktel.AttrNamespace: "shop", bktel.AttrTraceID: "stale", bktel.AttrSlot: "beliefs", bktel.AttrKind: "refund_due",
		bktel.AttrRole: "planner", bktel.AttrWriter: "planner", bktel.AttrCode: "STALE_EVIDENCE",
		bktel.AttrFailed: percept, bktel.AttrRootCause: "STALE_EVIDENCE",
	} {
		if a[key] != want {
			t.Errorf("belief span %s = %q, want %q", key, a[key], want)
		}
	}
	if bs.Status().Code != otelcodes.Error || bs.Status().Description != "STALE_EVIDENCE" {
		t.Errorf("a refusal sets the status: %+v", bs.Status())
	}
	if bs.Parent().SpanID() != root.SpanContext().SpanID() {
		t.Error("the decision span is not a child of the caller's span")
	}
	// Refused belief and refused plan both link to the percept's span.
	for _, s := range []sdktrace.ReadOnlySpan{bs, tel.byRecord(t, "kernel.submit", plan.ProposalID)} {
		links := s.Links()
		if len(links) != 1 || links[0].SpanContext.SpanID() != write.SpanContext().SpanID() {
			t.Errorf("%s links %+v, want one to the percept's write span", attrs(s)[bktel.AttrRecordID], links)
			continue
		}
		if la := links[0].Attributes; len(la) == 0 || la[0] != attribute.String(bktel.AttrRecordID, percept) {
			t.Errorf("link attributes %v", la)
		}
	}
	ps := tel.byRecord(t, "kernel.submit", plan.ProposalID)
	if attrs(ps)[bktel.AttrRootCause] != "STALE_EVIDENCE" || attrs(ps)[bktel.AttrCode] != "PLAN_MISSING_BELIEF" {
		t.Errorf("plan span %v", attrs(ps))
	}
	fs := tel.byRecord(t, "kernel.submit", fb.ProposalID)
	if fs.Status().Code != otelcodes.Unset || attrs(fs)[bktel.AttrCommittedID] != fb.CommittedID {
		t.Errorf("fallback span %v %+v", attrs(fs), fs.Status())
	}
	if v := tel.byRecord(t, "kernel.view", ""); attrs(v)[bktel.AttrTraceID] != "stale" {
		t.Errorf("view span %v", attrs(v))
	}

	// The decision log carries the same attributes, at debug level.
	logs := tel.logs.String()
	for _, want := range []string{"bk.code=STALE_EVIDENCE", "bk.failed=" + percept, "bk.kind=refund_due", "bk.namespace=shop"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the debug log lacks %q:\n%s", want, logs)
		}
	}

	// Metrics: decisions by slot, kind and code; latency.
	var rm metricdata.ResourceMetrics
	if err := tel.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	var latencies uint64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					slot, _ := dp.Attributes.Value(bktel.AttrSlot)
					code, _ := dp.Attributes.Value(bktel.AttrCode)
					got[m.Name+" "+slot.AsString()+" "+code.AsString()] += dp.Value
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					if m.Name == "bk.decision.duration" {
						latencies += dp.Count
					}
				}
			}
		}
	}
	for key, want := range map[string]int64{
		"bk.decisions beliefs STALE_EVIDENCE":    1,
		"bk.decisions plans PLAN_MISSING_BELIEF": 1,
		"bk.decisions actions COMMITTED":         1,
	} {
		if got[key] != want {
			t.Errorf("%s = %d, want %d (all: %v)", key, got[key], want, got)
		}
	}
	if latencies != 3 {
		t.Errorf("latency observations %d, want 3", latencies)
	}
}

// TestCommitLinksToPercepts: a committed action links to the span of the
// percept its belief rests on; the Governor's append and an expiry get
// spans.
func TestCommitLinksToPercepts(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tel := newTelemetry(t, func() time.Time { return now })
	ctx := context.Background()
	wctx, obs := tel.tp.Tracer("app").Start(ctx, "execute_tool lookup_charge")
	percept, _ := tel.k.Handle(blackboard.RoleTool, "payment_tool").Write(wctx, kernel.Entry{TraceID: "ok", Slot: blackboard.Percepts, Kind: "charge",
		Payload: blackboard.Payload{"charge_id": "ch_1", "conflict": true}, Confidence: new(0.8), TTL: time.Hour})
	obs.End()
	planner := tel.k.Proposer(blackboard.RolePlanner, "planner")
	if d, err := planner.Submit(ctx, kernel.Entry{TraceID: "ok", Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"charge"}}}); err != nil || !d.Committed() {
		t.Fatal(d.Code, err)
	}
	a, err := planner.Submit(ctx, kernel.Entry{TraceID: "ok", Slot: blackboard.Actions, Kind: "issue_refund",
		Payload: blackboard.Payload{"charge_id": "ch_1", "requires_beliefs": []string{"refund_due"}}})
	if err != nil || !a.Committed() {
		t.Fatal(a.Code, err)
	}
	if _, err := tel.k.Governor().Append(ctx, kernel.Follow{Role: blackboard.RoleApprover, Writer: "alice", Entry: kernel.Entry{
		TraceID: "ok", Slot: blackboard.Evidence, Kind: "approval", InputRefs: []string{a.CommittedID}, TTL: time.Minute}}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Hour)
	if n, err := tel.k.Expire(ctx, "ok"); err != nil || n == 0 {
		t.Fatalf("expire: %d %v", n, err)
	}
	as := tel.byRecord(t, "kernel.submit", a.ProposalID)
	var linked bool
	for _, l := range as.Links() {
		linked = linked || l.SpanContext.TraceID() == obs.SpanContext().TraceID() && mustGet(t, tel.k.Reader(), percept).Provenance.Span != ""
	}
	if !linked {
		t.Errorf("the committed action does not link to the percept's span: %+v", as.Links())
	}
	names := map[string]bool{}
	for _, s := range tel.spans.Ended() {
		names[s.Name()] = true
	}
	for _, want := range []string{"kernel.append", "kernel.expire"} {
		if !names[want] {
			t.Errorf("no %s span (have %v)", want, names)
		}
	}
}

// TestTelemetryOff: no-op providers switch tracing and metrics off;
// records keep no span.
func TestTelemetryOff(t *testing.T) {
	k, err := kernel.New(kernel.Config{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()})
	if err != nil {
		t.Fatal(err)
	}
	id, err := k.Handle(blackboard.RoleTool, "t").Write(context.Background(), kernel.Entry{TraceID: "tr", Slot: blackboard.Percepts, Kind: "charge"})
	if err != nil {
		t.Fatal(err)
	}
	if r := mustGet(t, k.Reader(), id); r.Provenance.Span != "" {
		t.Fatalf("span %q", r.Provenance.Span)
	}
}

// TestInstrumentsFollowTheProvider: kernels made one after another reuse
// instruments only when they share a meter provider, so each kernel's
// decisions reach the provider it was given.
func TestInstrumentsFollowTheProvider(t *testing.T) {
	first, second := newTelemetry(t, nil), newTelemetry(t, nil)
	ctx := context.Background()
	decide := func(k *kernel.Kernel, n int) {
		for i := range n {
			if _, err := k.Proposer(blackboard.RolePlanner, "p").Submit(ctx, kernel.Entry{TraceID: fmt.Sprint("tr", i), Slot: blackboard.Actions,
				Kind: kernel.FallbackQueueForReview, Payload: blackboard.Payload{"reason": "x"}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	decide(second.k, 2)
	decide(first.k, 1)
	count := func(tel *telemetry) int64 {
		var rm metricdata.ResourceMetrics
		if err := tel.reader.Collect(ctx, &rm); err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if d, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "bk.decisions" {
					for _, dp := range d.DataPoints {
						n += dp.Value
					}
				}
			}
		}
		return n
	}
	if a, b := count(first), count(second); a != 1 || b != 2 {
		t.Errorf("decisions recorded: first provider %d (want 1), second %d (want 2)", a, b)
	}
}
