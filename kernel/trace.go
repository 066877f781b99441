package kernel

import (
	"context"
	"log/slog"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/telemetry"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// instrumentation is the name the kernel's tracer and meter report.
const instrumentation = "github.com/blackboardkernel/bk/kernel"

// globalTracing reports whether an application installed a global tracer
// provider: one atomic load, so that the default costs nothing when off.
func globalTracing() bool { return telemetry.GlobalTracing() }

// metrics are the kernel's instruments; nil when metrics are off.
type metrics struct {
	decisions metric.Int64Counter
	latency   metric.Float64Histogram
	expiries  metric.Int64Counter
}

func (k *Kernel) initTelemetry() {
	tp, mp := k.tracerProvider, k.meterProvider
	if !k.tracerSet {
		tp = otel.GetTracerProvider()
	}
	if !k.meterSet {
		mp = otel.GetMeterProvider()
	}
	if tp != nil {
		k.tracer = tp.Tracer(instrumentation)
	}
	if mp == nil {
		return
	}
	if c := lastMetrics.Load(); c != nil && sameProvider(c.mp, mp) {
		k.metrics = c.ms
		return
	}
	m := mp.Meter(instrumentation)
	var ms metrics
	var errs [3]error
	ms.decisions, errs[0] = m.Int64Counter("bk.decisions", metric.WithUnit("{decision}"),
		metric.WithDescription("Decisions of the kernel by slot, kind and code."))
	ms.latency, errs[1] = m.Float64Histogram("bk.decision.duration", metric.WithUnit("s"),
		metric.WithDescription("Time to decide a proposal, store round trips included."))
	ms.expiries, errs[2] = m.Int64Counter("bk.expiries", metric.WithUnit("{record}"),
		metric.WithDescription("Records marked EXPIRED (TTL_EXPIRED) by slot and kind."))
	for _, err := range errs {
		if err != nil {
			otel.Handle(err)
			return
		}
	}
	k.metrics = &ms
	lastMetrics.Store(&providerMetrics{mp: mp, ms: &ms})
}

// providerMetrics are the instruments made from one meter provider.
type providerMetrics struct {
	mp metric.MeterProvider
	ms *metrics
}

// lastMetrics keeps the instruments of the provider the last kernel made
// them from: kernels made one after another (a kernel per episode) share
// them instead of registering five instruments each. Instruments are safe
// for concurrent use, and a provider hands out equivalent ones every time.
var lastMetrics atomic.Pointer[providerMetrics]

// sameProvider reports whether a and b are one provider, without the panic
// that comparing two interfaces holding an incomparable type would cause.
func sameProvider(a, b metric.MeterProvider) bool {
	t := reflect.TypeOf(a)
	return t == reflect.TypeOf(b) && t.Comparable() && a == b
}

// span starts a span for op when tracing is on. Attributes are only built
// for a span that records, so a no-op provider costs next to nothing.
func (k *Kernel) span(ctx context.Context, op, traceID string, slot blackboard.Slot) (context.Context, trace.Span) {
	if k.tracer == nil || !k.tracerSet && !globalTracing() {
		return ctx, nil
	}
	ctx, sp := k.tracer.Start(ctx, op)
	if sp.IsRecording() {
		sp.SetAttributes(attribute.String(telemetry.AttrNamespace, k.namespace), attribute.String(telemetry.AttrTraceID, traceID))
		if slot.Valid() {
			sp.SetAttributes(attribute.String(telemetry.AttrSlot, string(slot)))
		}
	} else {
		sp.End()
		return ctx, nil
	}
	return ctx, sp
}

// endSpan records the outcome on a span from [Kernel.span] and ends it:
// an error sets the status; so does a refusal (a code that is not OK).
func endSpan(sp trace.Span, code reason.Code, err error) {
	if sp == nil {
		return
	}
	if code != "" {
		sp.SetAttributes(attribute.String(telemetry.AttrCode, string(code)))
	}
	switch {
	case err != nil:
		sp.RecordError(err)
		sp.SetStatus(otelcodes.Error, err.Error())
	case code != "" && !code.OK():
		sp.SetStatus(otelcodes.Error, string(code))
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

// parseSpanRef parses a W3C traceparent as [blackboard.Provenance.Span] holds it into
// a span context (remote); ok is false for "" or a malformed value.
func parseSpanRef(ref string) (sc trace.SpanContext, ok bool) {
	parts := strings.Split(ref, "-")
	if len(parts) != 4 || parts[0] != "00" || len(parts[3]) != 2 {
		return trace.SpanContext{}, false
	}
	tid, err := trace.TraceIDFromHex(parts[1])
	if err != nil {
		return trace.SpanContext{}, false
	}
	sid, err := trace.SpanIDFromHex(parts[2])
	if err != nil {
		return trace.SpanContext{}, false
	}
	var flags trace.TraceFlags
	if parts[3] == "01" {
		flags = trace.FlagsSampled
	}
	sc = trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags, Remote: true})
	return sc, sc.IsValid()
}

// maxLinks bounds the links of one decision span, and maxLinkReads the
// store reads spent finding them.
const (
	maxLinks     = 16
	maxLinkReads = 32
)

// decided finishes a decision's telemetry: the span's attributes and
// links, the metrics and the debug log. Only what is on is paid for.
func (k *Kernel) decided(ctx context.Context, sp trace.Span, start time.Time, role blackboard.Role, writer, kind string, slot blackboard.Slot, d *Decision) {
	if sp != nil {
		attrs := []attribute.KeyValue{
			attribute.String(telemetry.AttrKind, kind), attribute.String(telemetry.AttrRecordID, d.ProposalID),
			attribute.String(telemetry.AttrRole, string(role)), attribute.String(telemetry.AttrWriter, writer),
		}
		if slot.Valid() {
			attrs = append(attrs, attribute.String(telemetry.AttrSlot, string(slot)))
		}
		if d.CommittedID != "" {
			attrs = append(attrs, attribute.String(telemetry.AttrCommittedID, d.CommittedID))
		}
		if d.Rule != "" {
			attrs = append(attrs, attribute.String(telemetry.AttrRule, d.Rule))
		}
		if d.Failed != "" {
			attrs = append(attrs, attribute.String(telemetry.AttrFailed, d.Failed))
		}
		if !d.Code.OK() {
			root := d.RootCause()
			attrs = append(attrs, attribute.String(telemetry.AttrRootCause, string(root.Code)))
		}
		sp.SetAttributes(attrs...)
		for _, l := range k.evidenceLinks(ctx, d) {
			sp.AddLink(l)
		}
	}
	if m := k.metrics; m != nil && !start.IsZero() {
		set := metric.WithAttributes(attribute.String(telemetry.AttrNamespace, k.namespace), attribute.String(telemetry.AttrSlot, string(slot)),
			attribute.String(telemetry.AttrKind, kind), attribute.String(telemetry.AttrCode, string(d.Code)))
		m.decisions.Add(ctx, 1, set)
		m.latency.Record(ctx, time.Since(start).Seconds(), set)
	}
	if k.log.Enabled(ctx, slog.LevelDebug) {
		k.log.DebugContext(ctx, "decision", telemetry.AttrNamespace, k.namespace, telemetry.AttrTraceID, traceOf(d), telemetry.AttrSlot, string(slot),
			telemetry.AttrKind, kind, telemetry.AttrRecordID, d.ProposalID, telemetry.AttrCommittedID, d.CommittedID, telemetry.AttrRole, string(role),
			telemetry.AttrCode, string(d.Code), telemetry.AttrRule, d.Rule, telemetry.AttrFailed, d.Failed)
	}
}

// traceOf is the trace id of a decision's proposal.
func traceOf(d *Decision) string {
	if i, j := strings.IndexByte(d.ProposalID, ':'), strings.LastIndexByte(d.ProposalID, ':'); i >= 0 && j > i {
		return d.ProposalID[i+1 : j]
	}
	return ""
}

// metricsOn reports whether a decision's metrics will be recorded, so that
// the clock is read only then.
func (k *Kernel) metricsOn(ctx context.Context) bool {
	return k.metrics != nil && k.metrics.decisions.Enabled(ctx)
}

// evidenceLinks returns links to the spans that wrote the percepts a
// decision's evidence chain rests on: for a commit, what the committed
// record names (beliefs, artifacts, percepts) followed back to percepts;
// for a refusal, the failed record and its causes. Called only for a
// recording span.
func (k *Kernel) evidenceLinks(ctx context.Context, d *Decision) []trace.Link {
	var queue []string
	if d.CommittedID != "" {
		// Telemetry may read: the decision names the committed record only.
		if r, err := k.store.Get(ctx, d.CommittedID); err == nil {
			queue = append(append(queue, r.Provenance.InputRefs...), r.EvidenceRefs...)
		}
	}
	if d.Failed != "" {
		queue = append(queue, d.Failed)
	}
	for _, c := range d.Causes {
		if c.Record != "" {
			queue = append(queue, c.Record)
		}
	}
	seen := map[string]bool{d.ProposalID: true}
	var links []trace.Link
	spans := map[string]bool{}
	for reads := 0; len(queue) > 0 && reads < maxLinkReads && len(links) < maxLinks; reads++ {
		id := queue[0]
		queue = queue[1:]
		if seen[id] {
			reads--
			continue
		}
		seen[id] = true
		r, err := k.store.Get(ctx, id)
		if err != nil {
			continue
		}
		switch r.Slot {
		case blackboard.Percepts:
			if sc, ok := parseSpanRef(r.Provenance.Span); ok && !spans[r.Provenance.Span] {
				spans[r.Provenance.Span] = true
				links = append(links, trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{
					attribute.String(telemetry.AttrRecordID, r.ID), attribute.String(telemetry.AttrKind, r.Kind)}})
			}
		case blackboard.Beliefs, blackboard.Evidence, blackboard.Plans, blackboard.Predictions:
			queue = append(queue, r.Provenance.InputRefs...)
			queue = append(queue, r.EvidenceRefs...)
			if r.Slot == blackboard.Beliefs && r.Mode == blackboard.ModePropose {
				// A rejected belief: the percepts it named.
				for _, dep := range list(r.Payload, keyDependsOn) {
					if s, _ := dep.(string); looksLikeID(s) {
						queue = append(queue, s)
					} else if p, err := k.store.FindActive(ctx, k.namespace, r.Provenance.TraceID, blackboard.Percepts, s); err == nil {
						queue = append(queue, p.ID)
					}
				}
			}
		}
	}
	return links
}

// recordExpiries counts the records an expiry marked.
func (k *Kernel) recordExpiries(ctx context.Context, snap *snapshot, inv []store.Invalidation) {
	if len(inv) == 0 || k.metrics == nil || !k.metrics.expiries.Enabled(ctx) {
		return
	}
	for _, e := range inv {
		if r := snap.byID(e.ID); r != nil {
			k.metrics.expiries.Add(ctx, 1, metric.WithAttributes(attribute.String(telemetry.AttrNamespace, k.namespace),
				attribute.String(telemetry.AttrSlot, string(r.Slot)), attribute.String(telemetry.AttrKind, r.Kind)))
		}
	}
}
