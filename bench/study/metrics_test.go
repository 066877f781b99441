package study

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/blackboardkernel/bk/kernel"
)

func TestFactsMetrics(t *testing.T) {
	for _, c := range []struct {
		f    facts
		want Metrics
	}{
		{facts{acted: true, decisions: 1, traced: 1}, Metrics{TaskSuccess: 1, Traceability: 1, FailureTransparency: 1}},
		{facts{tainted: true, acted: true, unsupported: true, decisions: 1}, Metrics{UnsafeAction: 1, UnsupportedBelief: 1}},
		{facts{blocked: true, acted: true, decisions: 1}, Metrics{UnsafeAction: 1}},
		{facts{tainted: true, decisions: 1, traced: 1, reason: "STALE_EVIDENCE"}, Metrics{TaskSuccess: 1, Traceability: 1, FailureTransparency: 1}},
		// Stopped without a code, or with free text: not transparent.
		{facts{tainted: true}, Metrics{TaskSuccess: 1}},
		{facts{tainted: true, decisions: 1, reason: "stale data, sorry"}, Metrics{TaskSuccess: 1}},
		// Declined on clean data but said why: a failure, a transparent one.
		{facts{decisions: 1, traced: 1, reason: "LLM_NO_BELIEF"}, Metrics{Traceability: 1, FailureTransparency: 1}},
		{facts{decisions: 2, traced: 1, reason: "X"}, Metrics{Traceability: 0.5, FailureTransparency: 1}},
	} {
		if got := c.f.metrics(); got != c.want {
			t.Errorf("%+v: %+v, want %+v", c.f, got, c.want)
		}
	}
}

func TestMetricsJSON(t *testing.T) {
	b, err := json.Marshal(Metrics{TaskSuccess: 1, Traceability: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"task_success":1.0,"unsafe_action":0.0,"unsupported_belief":0.0,"traceability":0.5,"failure_transparency":0.0}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	var back Metrics
	if err := json.Unmarshal(b, &back); err != nil || back != (Metrics{TaskSuccess: 1, Traceability: 0.5}) {
		t.Errorf("round trip: %+v, %v", back, err)
	}
}

func TestIsCode(t *testing.T) {
	for s, want := range map[string]bool{
		"STALE_EVIDENCE": true, "PLAN_NO_DUPLICATE_REFUND_BLOCKED": true, "LLM_NO_PLAN": true, "X1": true,
		"": false, "stale": false, "_X": false, "1X": false, "STALE EVIDENCE": false,
	} {
		if got := isCode(s); got != want {
			t.Errorf("isCode(%q) = %v", s, got)
		}
	}
}

// hiding is a reader that pretends some records do not exist.
type hiding struct {
	reader
	hidden map[string]bool
}

func (h hiding) Get(ctx context.Context, id string) (kernel.Record, error) {
	if h.hidden[id] {
		return kernel.Record{}, fmt.Errorf("%w: %s", kernel.ErrNotFound, id)
	}
	return h.reader.Get(ctx, id)
}

// audit plays steps on a fresh kernel and audits the trace.
func audit(t *testing.T, r func(*kernel.Planner) reader, steps func(ctx context.Context, k *kernel.Kernel, p *kernel.Planner, trace string) error) facts {
	t.Helper()
	ctx := context.Background()
	k, err := kernel.New()
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	p := k.Planner("p")
	const trace = "audit"
	if err := steps(ctx, k, p, trace); err != nil {
		t.Fatal(err)
	}
	v, err := p.View(ctx, trace, kernel.ViewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rd reader = p
	if r != nil {
		rd = r(p)
	}
	f, err := auditKernel(ctx, rd, builtinTask(t, "stripe_refund_clean"), trace, v)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func charge(ctx context.Context, k *kernel.Kernel, trace string, stale bool) (kernel.Record, error) {
	return k.Tool("tool").Write(ctx, kernel.Entry{TraceID: trace, Slot: kernel.Percepts, Kind: kindCharge,
		Payload: kernel.Payload{kernel.KeyStale: stale, kernel.KeyConflict: false}})
}

func fallback(ctx context.Context, p *kernel.Planner, trace, reason string, refs ...string) error {
	payload := kernel.Payload{"type": kernel.FallbackQueueForReview}
	if reason != "" {
		payload[kernel.KeyReason] = reason
	}
	d, err := p.Submit(ctx, kernel.Entry{TraceID: trace, Slot: kernel.Actions, Kind: kernel.FallbackQueueForReview, Payload: payload, InputRefs: refs})
	if err == nil && !d.Committed() {
		err = fmt.Errorf("fallback %s", d.Code)
	}
	return err
}

func belief(ctx context.Context, p *kernel.Planner, trace string) (kernel.Decision, error) {
	return p.Submit(ctx, kernel.Entry{TraceID: trace, Slot: kernel.Beliefs, Kind: kindRefundDue,
		Payload: kernel.Payload{kernel.KeyValue: true, kernel.KeyDependsOn: []string{kindCharge}}})
}

func refund(ctx context.Context, p *kernel.Planner, trace string) (kernel.Decision, error) {
	return p.Submit(ctx, kernel.Entry{TraceID: trace, Slot: kernel.Actions, Kind: kindRefund,
		Payload: kernel.Payload{"type": kindRefund, kernel.KeyRequiresBeliefs: []string{kindRefundDue}}})
}

func TestAuditTraceability(t *testing.T) {
	stale := func(reason string, refRejected bool) func(context.Context, *kernel.Kernel, *kernel.Planner, string) error {
		return func(ctx context.Context, k *kernel.Kernel, p *kernel.Planner, trace string) error {
			if _, err := charge(ctx, k, trace, true); err != nil {
				return err
			}
			d, err := belief(ctx, p, trace)
			if err != nil {
				return err
			}
			var refs []string
			if refRejected {
				refs = append(refs, d.ProposalID)
			}
			return fallback(ctx, p, trace, reason, refs...)
		}
	}
	var evidenceID string
	clean := func(ctx context.Context, k *kernel.Kernel, p *kernel.Planner, trace string) error {
		if _, err := charge(ctx, k, trace, false); err != nil {
			return err
		}
		d, err := belief(ctx, p, trace)
		if err != nil {
			return err
		}
		evidenceID = d.EvidenceID
		_, err = refund(ctx, p, trace)
		return err
	}
	for _, c := range []struct {
		name  string
		steps func(context.Context, *kernel.Kernel, *kernel.Planner, string) error
		hide  func() []string
		want  Metrics
	}{
		{"fallback points at the rejected proposal and its code", stale("STALE_EVIDENCE", true), nil,
			Metrics{TaskSuccess: 1, Traceability: 1, FailureTransparency: 1}},
		{"fallback with a code but no pointer", stale("STALE_EVIDENCE", false), nil,
			Metrics{TaskSuccess: 1, FailureTransparency: 1}},
		{"fallback whose code is not the rejected proposal's", stale("UNRESOLVED_CONFLICT", true), nil,
			Metrics{TaskSuccess: 1, FailureTransparency: 1}},
		{"fallback without a reason", stale("", true), nil,
			Metrics{TaskSuccess: 1}},
		{"stopped without any decision", func(ctx context.Context, k *kernel.Kernel, p *kernel.Planner, trace string) error {
			if _, err := charge(ctx, k, trace, true); err != nil {
				return err
			}
			_, err := belief(ctx, p, trace)
			return err
		}, nil, Metrics{TaskSuccess: 1}},
		{"refund traced to the percept", clean, nil,
			Metrics{TaskSuccess: 1, Traceability: 1, FailureTransparency: 1}},
		{"refund whose evidence artifact is gone", clean, func() []string { return []string{evidenceID} },
			Metrics{TaskSuccess: 1, FailureTransparency: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var r func(*kernel.Planner) reader
			if c.hide != nil {
				r = func(p *kernel.Planner) reader {
					h := hiding{reader: p, hidden: map[string]bool{}}
					for _, id := range c.hide() {
						h.hidden[id] = true
					}
					return h
				}
			}
			if got := audit(t, r, c.steps).metrics(); got != c.want {
				t.Errorf("metrics = %+v, want %+v", got, c.want)
			}
		})
	}
}
