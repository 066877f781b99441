package telemetry

import (
	"context"
	"reflect"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// defaultGlobalTP is the global provider as it is before an application
// installs one: a delegating no-op. nil when an SDK was already installed.
var defaultGlobalTP = func() trace.TracerProvider {
	tp := otel.GetTracerProvider()
	if t := reflect.TypeOf(tp); t.Kind() == reflect.Pointer && strings.HasSuffix(t.Elem().PkgPath(), "otel/internal/global") {
		return tp
	}
	return nil
}()

// GlobalTracing reports whether an application installed a global tracer
// provider: one atomic load.
func GlobalTracing() bool { return otel.GetTracerProvider() != defaultGlobalTP }

// Tracer is a component's tracer: from tp when set (nil tp: tracing off),
// else from the global provider.
type Tracer struct {
	tracer trace.Tracer // nil: off
	set    bool         // an explicit provider, not the global one
}

// NewTracer resolves the provider: set says whether the owner chose one.
func NewTracer(name string, set bool, tp trace.TracerProvider) Tracer {
	if !set {
		tp = otel.GetTracerProvider()
	}
	if tp == nil {
		return Tracer{}
	}
	return Tracer{tracer: tp.Tracer(name), set: set}
}

// Start starts a span, or returns ctx and nil when tracing is off (no
// provider, or the global one before an SDK is installed) or the span
// would not record: callers build attributes only for a non-nil span.
func (t Tracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if t.tracer == nil || !t.set && !GlobalTracing() {
		return ctx, nil
	}
	ctx2, sp := t.tracer.Start(ctx, name, opts...)
	if !sp.IsRecording() {
		sp.End()
		return ctx2, nil
	}
	return ctx2, sp
}

// Meter resolves a component's meter: from mp when set (nil mp: metrics
// off, and Meter returns nil), else from the global provider.
func Meter(name string, set bool, mp metric.MeterProvider) metric.Meter {
	if !set {
		mp = otel.GetMeterProvider()
	}
	if mp == nil {
		return nil
	}
	return mp.Meter(name)
}

// TracerChoice resolves a configured tracer provider into NewTracer's
// arguments: nil is the global provider (set false); a no-op provider
// (trace/noop) is tracing off (set, with no provider); any other is itself.
func TracerChoice(tp trace.TracerProvider) (set bool, _ trace.TracerProvider) {
	switch tp.(type) {
	case nil:
		return false, nil
	case tracenoop.TracerProvider, *tracenoop.TracerProvider:
		return true, nil
	}
	return true, tp
}

// MeterChoice resolves a configured meter provider as TracerChoice does.
func MeterChoice(mp metric.MeterProvider) (set bool, _ metric.MeterProvider) {
	switch mp.(type) {
	case nil:
		return false, nil
	case metricnoop.MeterProvider, *metricnoop.MeterProvider:
		return true, nil
	}
	return true, mp
}
