package kernel

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// instrumentation is the name the kernel's tracer reports.
const instrumentation = "github.com/blackboardkernel/bk/kernel"

// WithTracerProvider sets the OpenTelemetry provider the kernel traces
// writes and decisions with: every write and commit gets a span. Without
// this option the kernel uses the global provider, and only inside a
// caller's recording span (its spans join the caller's trace), so that a
// program with tracing off pays nothing. nil turns instrumentation off
// altogether.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(k *Kernel) { k.tracerSet, k.tracerProvider = true, tp }
}

func (k *Kernel) initTracer() {
	tp := k.tracerProvider
	if !k.tracerSet {
		tp = otel.GetTracerProvider()
	}
	if tp != nil {
		k.tracer = tp.Tracer(instrumentation)
	}
}

// span starts a span for op when tracing is on. Attributes are only built
// for a span that records, so a no-op provider costs next to nothing.
func (k *Kernel) span(ctx context.Context, op, traceID string, slot Slot) (context.Context, trace.Span) {
	if k.tracer == nil || !k.tracerSet && !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, nil
	}
	ctx, sp := k.tracer.Start(ctx, op)
	if sp.IsRecording() {
		sp.SetAttributes(attribute.String("bk.trace_id", traceID))
		if slot.Valid() {
			sp.SetAttributes(attribute.String("bk.slot", slot.String()))
		}
	}
	return ctx, sp
}

// endSpan records the outcome on a span from [Kernel.span] and ends it.
func endSpan(sp trace.Span, code Code, err error) {
	if sp == nil {
		return
	}
	if sp.IsRecording() {
		if code != "" {
			sp.SetAttributes(attribute.String("bk.code", string(code)))
		}
		if err != nil {
			sp.RecordError(err)
			sp.SetStatus(otelcodes.Error, err.Error())
		}
	}
	sp.End()
}

// spanRef renders the span context of ctx as a W3C traceparent, or "" when
// ctx carries no valid span.
func spanRef(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}
