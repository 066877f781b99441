package toolgate

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/budget"
	"github.com/blackboardkernel/bk/chain"
	"github.com/blackboardkernel/bk/internal/kernelhook"
	"github.com/blackboardkernel/bk/internal/telemetry"
	"github.com/blackboardkernel/bk/reason"
)

// instrumentation is the name the gate's tracer and meter report.
const instrumentation = "github.com/blackboardkernel/bk/toolgate"

type gateMetrics struct {
	calls, attempts, outcomes, approvals metric.Int64Counter
	pressure                             metric.Float64Histogram
}

// initTelemetry sets up the gate's tracer and metrics from its kernel's
// providers (see [telemetry.TracerChoice]).
func (x *executor) initTelemetry(tpSet bool, tp trace.TracerProvider, mpSet bool, mp metric.MeterProvider) error {
	g := x.g
	g.tracer = telemetry.NewTracer(instrumentation, tpSet, tp)
	m := telemetry.Meter(instrumentation, mpSet, mp)
	if m == nil {
		return nil
	}
	var gm gateMetrics
	var err error
	if gm.calls, err = m.Int64Counter("bk.tool_calls", metric.WithUnit("{call}"),
		metric.WithDescription("Tool calls through the gate, by tool, outcome and code.")); err != nil {
		return err
	}
	if gm.attempts, err = m.Int64Counter("bk.effect.attempts", metric.WithUnit("{attempt}"),
		metric.WithDescription("Effect attempts started, by tool.")); err != nil {
		return err
	}
	if gm.outcomes, err = m.Int64Counter("bk.effect.outcomes", metric.WithUnit("{effect}"),
		metric.WithDescription("Effects recorded, by tool, outcome (succeeded, failed, escalated, refused) and code.")); err != nil {
		return err
	}
	if gm.approvals, err = m.Int64Counter("bk.approvals", metric.WithUnit("{approval}"),
		metric.WithDescription("Approvals and denials recorded, by decision.")); err != nil {
		return err
	}
	if gm.pressure, err = m.Float64Histogram("bk.budget.pressure", metric.WithUnit("1"),
		metric.WithDescription("Budget pressure (used/limit) of the run a call was checked against.")); err != nil {
		return err
	}
	pending, err := m.Int64ObservableGauge("bk.approvals.pending", metric.WithUnit("{action}"),
		metric.WithDescription("Actions waiting for approval in the gate's namespace."))
	if err != nil {
		return err
	}
	oldest, err := m.Float64ObservableGauge("bk.approvals.pending.age", metric.WithUnit("s"),
		metric.WithDescription("How long the oldest action has waited for approval."))
	if err != nil {
		return err
	}
	if _, err := m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		n, age, err := x.pendingNow(ctx)
		if err != nil {
			return err
		}
		set := metric.WithAttributes(attribute.String(telemetry.AttrNamespace, kernelhook.Namespace(x.k)))
		o.ObserveInt64(pending, int64(n), set)
		o.ObserveFloat64(oldest, age.Seconds(), set)
		return nil
	}, pending, oldest); err != nil {
		return err
	}
	g.metrics = &gm
	return nil
}

// pendingNow counts the actions waiting for approval across the
// namespace, and the age of the oldest.
func (x *executor) pendingNow(ctx context.Context) (int, time.Duration, error) {
	n, oldest := 0, int64(-1)
	for d, err := range audit.List(ctx, x.reader, audit.Query{Outcome: audit.OutcomePendingApproval}) {
		if err != nil {
			return 0, 0, err
		}
		pending, err := x.pendingApprovals(ctx, d.TraceID)
		if err != nil {
			return 0, 0, err
		}
		for _, p := range pending {
			if p.ActionID == d.Subject {
				n++
				if oldest < 0 || d.TimeMS < oldest {
					oldest = d.TimeMS
				}
			}
		}
	}
	if n == 0 {
		return 0, 0, nil
	}
	return n, kernelhook.Now(x.k).Sub(time.UnixMilli(oldest)), nil
}

// callSpanOptions are the options of a call's span, built once: with
// tracing off, starting a span then costs no allocation.
var callSpanOptions = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal)}

// startCall starts a call's span, "execute_tool {tool}", always the
// gate's own and a child of whatever span ctx carries: an application's
// span or a framework's own tool span is a parent, never taken for the
// tool span, so the GenAI attributes are never lost under it.
func (x *executor) startCall(ctx context.Context, c Call) (context.Context, trace.Span) {
	g := x.g
	name := "execute_tool " + toolLabel(c.Tool)
	if e := g.tools[c.Tool]; e != nil {
		name = e.spanName
	}
	ctx, sp := g.tracer.Start(ctx, name, callSpanOptions...)
	if sp == nil {
		return ctx, nil
	}
	attrs := []attribute.KeyValue{
		attribute.String(telemetry.AttrGenAIToolName, toolLabel(c.Tool)), attribute.String(telemetry.AttrGenAIToolType, "function"),
		attribute.String(telemetry.AttrNamespace, kernelhook.Namespace(x.k)), attribute.String(telemetry.AttrTraceID, clip(c.TraceID)),
		attribute.String(telemetry.AttrCallCaller, clip(c.Caller)), attribute.String(telemetry.AttrGenAIOperation, "execute_tool"),
	}
	if c.ID != "" {
		attrs = append(attrs, attribute.String(telemetry.AttrGenAIToolCall, clip(c.ID)))
	}
	sp.SetAttributes(attrs...)
	return ctx, sp
}

// ended sets a call's (or an Execute's) receipt, records its result on its
// span and in the metrics, and ends the span.
func (x *executor) ended(ctx context.Context, sp trace.Span, tool string, r *Result, err error) {
	g := x.g
	if l, ok := kernelhook.ReceiptsOf(ctx).Last(); ok {
		r.Receipt = chain.Hash(l)
	}
	res := *r
	if sp != nil {
		attrs := []attribute.KeyValue{attribute.String(telemetry.AttrOutcome, string(res.Outcome)), attribute.String(telemetry.AttrCode, string(res.Code))}
		if res.Receipt != (chain.Hash{}) {
			attrs = append(attrs, attribute.String(telemetry.AttrReceipt, res.Receipt.String()))
		}
		if res.ActionID != "" {
			attrs = append(attrs, attribute.String(telemetry.AttrActionID, res.ActionID))
		}
		if res.RootCause.Code != "" {
			attrs = append(attrs, attribute.String(telemetry.AttrRootCause, string(res.RootCause.Code)))
			if res.RootCause.Record != "" {
				attrs = append(attrs, attribute.String(telemetry.AttrFailed, res.RootCause.Record))
			}
		}
		sp.SetAttributes(attrs...)
		switch {
		case err != nil:
			sp.RecordError(err)
			sp.SetStatus(codes.Error, err.Error())
		case res.Outcome == audit.OutcomeRefused || res.Outcome == audit.OutcomeFailed:
			sp.SetStatus(codes.Error, string(res.Code))
		}
		sp.End()
	}
	if g.metrics != nil && err == nil && g.metrics.calls.Enabled(ctx) {
		g.metrics.calls.Add(ctx, 1, metric.WithAttributes(attribute.String(telemetry.AttrNamespace, kernelhook.Namespace(x.k)),
			attribute.String(telemetry.AttrGenAIToolName, tool), attribute.String(telemetry.AttrOutcome, string(res.Outcome)),
			attribute.String(telemetry.AttrCode, string(res.Code))))
	}
}

// attemptStarted counts an effect attempt.
func (x *executor) attemptStarted(ctx context.Context, j *job) {
	g := x.g
	if g.metrics != nil && g.metrics.attempts.Enabled(ctx) {
		g.metrics.attempts.Add(ctx, 1, metric.WithAttributes(attribute.String(telemetry.AttrNamespace, kernelhook.Namespace(x.k)),
			attribute.String(telemetry.AttrGenAIToolName, j.e.Name)))
	}
}

// endAttempt ends an effect attempt's span.
func endAttempt(sp trace.Span, j *job, n int, effErr error) {
	if sp == nil {
		return
	}
	sp.SetAttributes(attribute.String(telemetry.AttrGenAIToolName, j.e.Name), attribute.String(telemetry.AttrActionID, j.act.ID),
		attribute.Int(telemetry.AttrAttempt, n), attribute.String(telemetry.AttrTraceID, j.trace))
	if effErr != nil {
		sp.RecordError(effErr)
		sp.SetStatus(codes.Error, effErr.Error())
	}
	sp.End()
}

// effectRecorded counts an effect's recorded outcome.
func (x *executor) effectRecorded(ctx context.Context, j *job, status string, code reason.Code) {
	g := x.g
	if g.metrics != nil && g.metrics.outcomes.Enabled(ctx) {
		g.metrics.outcomes.Add(ctx, 1, metric.WithAttributes(attribute.String(telemetry.AttrNamespace, kernelhook.Namespace(x.k)),
			attribute.String(telemetry.AttrGenAIToolName, j.e.Name), attribute.String(telemetry.AttrOutcome, status),
			attribute.String(telemetry.AttrCode, string(code))))
	}
}

// budgetChecked puts the budget snapshot a call was checked against on
// the call's span (bk.budget.run_id, bk.budget.pressure, and
// bk.budget.used.<resource> and bk.budget.limit.<resource> for each
// limited resource) and its budget pressure in the bk.budget.pressure
// histogram.
func (x *executor) budgetChecked(ctx context.Context, tool string, snap budget.Snapshot) {
	g := x.g
	if sp := trace.SpanFromContext(ctx); sp.IsRecording() {
		attrs := []attribute.KeyValue{attribute.String(telemetry.AttrBudgetPrefix+"run_id", snap.RunID),
			attribute.Float64(telemetry.AttrBudgetPrefix+"pressure", snap.Budget)}
		for res, limit := range snap.Limits {
			attrs = append(attrs, attribute.Float64(telemetry.AttrBudgetPrefix+"used."+string(res), snap.Used[res]),
				attribute.Float64(telemetry.AttrBudgetPrefix+"limit."+string(res), limit))
		}
		sp.SetAttributes(attrs...)
	}
	if g.metrics != nil && g.metrics.pressure.Enabled(ctx) {
		g.metrics.pressure.Record(ctx, snap.Budget, metric.WithAttributes(attribute.String(telemetry.AttrNamespace, kernelhook.Namespace(x.k)),
			attribute.String(telemetry.AttrGenAIToolName, tool)))
	}
}
