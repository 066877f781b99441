package orchestrator_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/telemetry"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/orchestrator"
)

// sensorOnce writes one percept and then has nothing more to do.
type sensorOnce struct{ h kernel.Handle }

func (s sensorOnce) ID() string                { return "sensor" }
func (s sensorOnce) Handle() kernel.Handle     { return s.h }
func (s sensorOnce) Reads() []blackboard.Slot  { return nil }
func (s sensorOnce) Writes() []blackboard.Slot { return []blackboard.Slot{blackboard.Percepts} }
func (s sensorOnce) ShouldActivate(v kernel.View) bool {
	return !v.Has(blackboard.Percepts, "temperature")
}
func (s sensorOnce) Step(ctx context.Context, sc *orchestrator.StepContext) (bool, error) {
	traceID := sc.TraceID()
	_, err := s.h.Write(ctx, kernel.Entry{TraceID: traceID, Slot: blackboard.Percepts, Kind: "temperature", Payload: blackboard.Payload{"c": 21.0}})
	return err == nil, err
}

// TestRunSpans: a run is an orchestrator.run span, each worker step a
// worker.step span under it, and the worker's kernel calls nest under its
// step.
func TestRunSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	k, err := kernel.New(kernel.Config{TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	o, err := orchestrator.New(orchestrator.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Register(sensorOnce{k.Handle(blackboard.RoleTool, "sensor")}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Run(context.Background(), "ep-1"); err != nil {
		t.Fatal(err)
	}
	var run, step, write sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		switch s.Name() {
		case "orchestrator.run":
			run = s
		case "worker.step":
			step = s
		case "kernel.write":
			write = s
		}
	}
	if run == nil || step == nil || write == nil {
		t.Fatalf("spans: run %v step %v write %v", run, step, write)
	}
	if step.Parent().SpanID() != run.SpanContext().SpanID() || write.Parent().SpanID() != step.SpanContext().SpanID() {
		t.Error("the span tree is not run → step → kernel call")
	}
	attrs := map[string]string{}
	for _, a := range step.Attributes() {
		attrs[string(a.Key)] = a.Value.String()
	}
	if attrs["bk.worker"] != "sensor" || attrs[telemetry.AttrRole] != "tool" || attrs["bk.produced"] != "true" || attrs[telemetry.AttrTraceID] != "ep-1" {
		t.Errorf("step attributes %v", attrs)
	}
}
