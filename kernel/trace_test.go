package kernel_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
)

// recorder is a minimal recording TracerProvider: enough to see which spans
// the kernel starts and what it puts on them.
type recorder struct {
	embedded.TracerProvider
	mu    sync.Mutex
	spans []*recSpan
}

func (r *recorder) Tracer(string, ...trace.TracerOption) trace.Tracer { return recTracer{r: r} }

type recTracer struct {
	embedded.Tracer
	r *recorder
}

func (t recTracer) Start(ctx context.Context, name string, _ ...trace.SpanStartOption) (context.Context, trace.Span) {
	s := &recSpan{Span: noop.Span{}, name: name, attrs: map[string]string{}}
	t.r.mu.Lock()
	t.r.spans = append(t.r.spans, s)
	t.r.mu.Unlock()
	return trace.ContextWithSpan(ctx, s), s
}

type recSpan struct {
	trace.Span
	name   string
	attrs  map[string]string
	status otelcodes.Code
	ended  bool
}

func (s *recSpan) IsRecording() bool { return true }
func (s *recSpan) SetAttributes(kv ...attribute.KeyValue) {
	for _, a := range kv {
		s.attrs[string(a.Key)] = a.Value.String()
	}
}
func (s *recSpan) SetStatus(c otelcodes.Code, _ string)    { s.status = c }
func (s *recSpan) RecordError(error, ...trace.EventOption) {}
func (s *recSpan) End(...trace.SpanEndOption)              { s.ended = true }

func TestTracingRecordsWritesAndDecisions(t *testing.T) {
	rec := &recorder{}
	k, err := kernel.New(kernel.Config{TracerProvider: rec})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := k.Handle(blackboard.RoleTool, "t").Write(ctx, kernel.Entry{TraceID: "tr", Slot: blackboard.Percepts, Kind: "charge", Payload: blackboard.Payload{"stale": true}}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Proposer(blackboard.RolePlanner, "p").Submit(ctx, kernel.Entry{TraceID: "tr", Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"charge"}}}); err != nil {
		t.Fatal(err)
	}
	prop, err := k.Proposer(blackboard.RolePlanner, "p").Write(ctx, kernel.Entry{TraceID: "tr", Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"charge"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Proposer(blackboard.RolePlanner, "p").Commit(ctx, "tr", prop); err != nil {
		t.Fatal(err)
	}
	_, err = k.Proposer(blackboard.RolePlanner, "p").Write(ctx, kernel.Entry{TraceID: "tr", Slot: blackboard.Constraints, Kind: "x"})
	if !errors.Is(err, blackboard.ErrPermission) {
		t.Fatalf("want a permission error, got %v", err)
	}
	var got []string
	for _, s := range rec.spans {
		if !s.ended {
			t.Errorf("span %s not ended", s.name)
		}
		got = append(got, s.name+" "+s.attrs["bk.slot"]+" "+s.attrs["bk.code"]+" "+s.status.String())
	}
	want := []string{
		"kernel.write percepts COMMITTED Unset",
		"kernel.submit beliefs STALE_EVIDENCE Error", // a refusal sets the status
		"kernel.write beliefs  Unset",
		"kernel.commit beliefs STALE_EVIDENCE Error",
		"kernel.write constraints  Error",
	}
	if len(got) != len(want) {
		t.Fatalf("spans %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("span %d = %q, want %q", i, got[i], want[i])
		}
	}
	for _, s := range rec.spans {
		if s.attrs["bk.trace_id"] != "tr" {
			t.Errorf("span %s has trace id %q", s.name, s.attrs["bk.trace_id"])
		}
	}
}

func TestTracingOff(t *testing.T) {
	// A no-op provider turns instrumentation off; the kernel must still work.
	k, err := kernel.New(kernel.Config{TracerProvider: noop.NewTracerProvider()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Handle(blackboard.RoleTool, "t").Write(context.Background(), kernel.Entry{TraceID: "tr", Slot: blackboard.Percepts, Kind: "charge"}); err != nil {
		t.Fatal(err)
	}
}

// TestTracingGlobalProvider: by default the kernel traces with the global
// provider once the application installs one, inside a caller's span or
// not.
func TestTracingGlobalProvider(t *testing.T) {
	k, err := kernel.New(kernel.Config{}) // the global provider, still the default no-op
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(rec)
	t.Cleanup(func() { otel.SetTracerProvider(prev) })

	entry := kernel.Entry{TraceID: "tr", Slot: blackboard.Percepts, Kind: "charge"}
	if _, err := k.Handle(blackboard.RoleTool, "t").Write(context.Background(), entry); err != nil {
		t.Fatal(err)
	}
	if len(rec.spans) != 1 || rec.spans[0].name != "kernel.write" {
		t.Fatalf("after the SDK was installed a write started %d spans", len(rec.spans))
	}
	ctx, parent := rec.Tracer("app").Start(context.Background(), "app.request")
	if _, err := k.Handle(blackboard.RoleTool, "t").Write(ctx, entry); err != nil {
		t.Fatal(err)
	}
	parent.End()
	if len(rec.spans) != 3 || rec.spans[2].name != "kernel.write" {
		t.Fatalf("inside a recording span the kernel should add its own: %d spans", len(rec.spans))
	}
}

// TestRecordsKeepTheirSpan: every record keeps the span context it was
// written under as a W3C traceparent, the committed twin and the artifact
// of a decision included, so that a decision can be linked to the spans
// of the percepts it rests on.
func TestRecordsKeepTheirSpan(t *testing.T) {
	k, err := kernel.New(kernel.Config{})
	if err != nil {
		t.Fatal(err)
	}
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(context.Background(),
		trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
	const want = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	pid, err := k.Handle(blackboard.RoleTool, "t").Write(ctx, kernel.Entry{TraceID: "tr", Slot: blackboard.Percepts, Kind: "charge"})
	if err != nil {
		t.Fatal(err)
	}
	if p := mustGet(t, k.Reader(), pid); p.Provenance.Span != want {
		t.Fatalf("percept span %q, want %q", p.Provenance.Span, want)
	}
	d, err := k.Proposer(blackboard.RolePlanner, "p").Submit(ctx, kernel.Entry{TraceID: "tr", Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"charge"}}})
	if err != nil || !d.Committed() {
		t.Fatal(d.Code, err)
	}
	for _, id := range []string{d.ProposalID, d.CommittedID, d.EvidenceID} {
		r, err := k.Proposer(blackboard.RolePlanner, "p").Get(ctx, id)
		if err != nil || r.Provenance.Span != want {
			t.Errorf("%s span %q (%v), want %q", id, r.Provenance.Span, err, want)
		}
	}
	untraced, err := k.Handle(blackboard.RoleTool, "t").Write(context.Background(), kernel.Entry{TraceID: "tr", Slot: blackboard.Percepts, Kind: "charge"})
	if err != nil {
		t.Fatal(err)
	}
	if r := mustGet(t, k.Reader(), untraced); r.Provenance.Span != "" {
		t.Errorf("untraced write span %q", r.Provenance.Span)
	}
}
