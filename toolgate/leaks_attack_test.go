package toolgate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/failure"
	"github.com/blackboardkernel/bk/internal/jsonval"
	"github.com/blackboardkernel/bk/mask"
	"github.com/blackboardkernel/bk/reason"
)

// withPatterns gives lookup_order's masked order_id a pattern and
// search_kb's query a bound, so that a value can break a rule whose
// library words quote it.
func withPatterns(su *setup) {
	for i := range su.tools {
		switch su.tools[i].Name {
		case "lookup_order":
			su.tools[i].Parameters = json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string","pattern":"^ord_[0-9]+$"}},"required":["order_id"]}`)
		case "search_kb":
			su.tools[i].Parameters = json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","maxLength":64,"pattern":"^[a-z ]*$"}},"required":["query"]}`)
		}
	}
}

// A schema refusal names the argument and the rule it broke, never the
// value: of a masked argument (whose value must never be stored) and of
// any other.
func TestAttackSchemaRefusalQuotesValue(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		res := d.call("t", "support", "refund", "lookup_order", `{"order_id":"`+secretOrder+`"}`)
		wantOutcome(t, "masked order id off its pattern", res, audit.OutcomeRefused, reason.InvalidArguments)
		if !strings.Contains(res.RootCause.Detail, `"order_id"`) || !strings.Contains(res.RootCause.Detail, `"pattern"`) {
			t.Errorf("detail %q, want the argument and the rule named", res.RootCause.Detail)
		}
		const plain = "Where Is My Refund 0000"
		res = d.call("t", "researcher", "", "search_kb", `{"query":"`+plain+`"}`)
		wantOutcome(t, "query off its pattern", res, audit.OutcomeRefused, reason.InvalidArguments)
		d.noSecret(t, secretOrder)
		// The unmasked query stays in the refusal's args_raw, as any
		// unmasked call refused before its arguments parse; its detail,
		// which the model and explanations show, names no value.
		for _, r := range d.decisions(audit.Query{TraceID: "t"}) {
			if strings.Contains(r.Detail, plain) || strings.Contains(r.Detail, secretOrder) {
				t.Errorf("refusal %s quotes the value: %q", r.ID, r.Detail)
			}
		}
		for _, r := range d.decisions(audit.Query{TraceID: "t"}) {
			if r.Code == reason.InvalidArguments && r.Context["argument"] == nil {
				t.Errorf("refusal %s names no argument: %+v", r.ID, r.Context)
			}
		}
	}, withMasking, withPatterns)
}

// An argument too large to store is a refusal with a decision record that
// holds its size and digest, never an error that ends the run: one that
// breaks its schema, one that fits it, and one near the limit whose
// refusal (a binding's) would hold it.
func TestAttackOversizedArgument(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		huge := strings.Repeat("a", 1<<20)
		for _, c := range []struct{ what, tool, caller, args string }{
			{"over its maxLength", "search_kb", "researcher", `{"query":"` + huge + `"}`},
			{"over the store's limit", "issue_refund", "support", `{"order_id":"ord_1","amount":1,"memo":"` + huge + `"}`},
		} {
			res, err := d.g.Call(d.ctx, Call{Tool: c.tool, Args: json.RawMessage(c.args), Caller: c.caller, TraceID: "big"})
			if err != nil {
				t.Fatalf("%s: Call returned %v, want a refusal", c.what, err)
			}
			wantOutcome(t, c.what, res, audit.OutcomeRefused, reason.InvalidArguments)
			rec := d.decisionRecord(res.DecisionID)
			if n, _ := jsonval.Float(rec.Context[keyArgsBytes]); int(n) != len(c.args) {
				t.Errorf("%s: record %+v, want %s %d", c.what, rec.Context, keyArgsBytes, len(c.args))
			}
			if d, _ := rec.Context[keyArgsRawDigest].(string); !strings.HasPrefix(d, "sha256:") {
				t.Errorf("%s: record holds no digest of the arguments: %+v", c.what, rec.Context)
			}
		}
		// Near the limit: the arguments fit an action, and the refusal
		// of an unbound order would hold them with its detail.
		d.ground("near", "ord_1")
		memo := strings.Repeat("m", 1<<20-200)
		res, err := d.g.Call(d.ctx, Call{Tool: "issue_refund", Args: json.RawMessage(`{"order_id":"ord_2","amount":1,"memo":"` + memo + `"}`),
			Caller: "support", TraceID: "near"})
		if err != nil {
			t.Fatalf("unbound refund near the limit: Call returned %v, want a refusal", err)
		}
		if res.Outcome != audit.OutcomeRefused || res.DecisionID == "" {
			t.Fatalf("unbound refund near the limit: %+v, want a recorded refusal", res)
		}
		rec := d.decisionRecord(res.DecisionID)
		if _, held := rec.Context["args"]; held || rec.Context[keyArgsBytes] == nil || rec.Context["args_digest"] == nil {
			t.Errorf("near-limit refusal %+v, want the arguments' size and digest in their place", rec.Context)
		}
	}, func(su *setup) {
		for i := range su.tools {
			switch su.tools[i].Name {
			case "search_kb":
				su.tools[i].Parameters = json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","maxLength":64}},"required":["query"]}`)
			case "issue_refund":
				su.tools[i].Parameters = json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"},"amount":{"type":"number"},"memo":{"type":"string"}},"required":["order_id","amount"]}`)
				su.tools[i].Approval = ""
			}
		}
	})
}

// decisionRecord reads one decision record by id.
func (d *desk) decisionRecord(id string) audit.Entry {
	d.t.Helper()
	for r, err := range audit.List(d.ctx, d.g.Kernel().Reader(), audit.Query{}) {
		if err != nil {
			d.t.Fatal(err)
		}
		if r.ID == id {
			return r
		}
	}
	d.t.Fatalf("no decision record %s", id)
	return audit.Entry{}
}

// logSink is a slog handler's output a test reads.
type logSink struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *logSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// withLog sends the kernel's log (and so the gate's) to sink.
func withLog(sink *logSink) func(*setup) {
	return func(su *setup) {
		su.cfg.Kernel.Logger = slog.New(slog.NewJSONHandler(sink, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
}

// A refund whose effect moved the money and then panicked (with a secret
// in the panic's message) is EFFECT_UNKNOWN, not "failed": the model is
// told it is not known, nothing starts it again, the operator's log has
// the panic and its stack, and no record holds the secret.
func TestAttackEffectPanicAfterTheMoneyMoved(t *testing.T) {
	const secret = "sk_live_PANIC_SECRET"
	sink := &logSink{}
	onStores(t, func(t *testing.T, d *desk) {
		moved := 0
		d.setEffect("issue_refund", func(context.Context, Invocation) (blackboard.Payload, error) {
			moved++ // the money moved; then building the receipt blew up
			panic("refund receipt for " + secret)
		})
		d.ground("t", "ord_1")
		res := d.refund("t", "ord_1", 100)
		wantOutcome(t, "panicked refund", res, audit.OutcomeFailed, reason.EffectUnknown)
		if f, ok := res.Failure(); !ok || f.Status() != failure.StatusUnknown || f.Retryable() {
			t.Errorf("Failure() = %v, want FAILED_UNKNOWN, not retryable", f)
		}
		if text := res.ForModel(); strings.Contains(text, string(reason.EffectFailed)) || strings.Contains(text, secret) {
			t.Errorf("the model is told %s", text)
		}
		if again := d.execute(res.ActionID); again.Code != reason.EffectUnknown || moved != 1 {
			t.Errorf("Execute after the panic: %s, effect ran %d times; want EFFECT_UNKNOWN, once", again.Code, moved)
		}
		d.noSecret(t, secret)
		d.noSecret(t, "goroutine ")
		log := sink.String()
		if !strings.Contains(log, "effect panicked") || !strings.Contains(log, secret) || !strings.Contains(log, "goroutine ") {
			t.Errorf("the operator's log has no panic with its stack: %s", log)
		}
	}, withLog(sink))
}

// The text of an effect's error is never stored unless the tool marks it
// Recordable, and then with the real values of masked arguments replaced
// by their masks; the operator's log has the text.
func TestAttackEffectErrorTextStored(t *testing.T) {
	const upstream = "card 4000-0000-0000-0002 declined, token tok_SECRET"
	sink := &logSink{}
	onStores(t, func(t *testing.T, d *desk) {
		d.setEffect("search_kb", func(context.Context, Invocation) (blackboard.Payload, error) {
			return nil, errors.New(upstream)
		})
		res := d.call("t", "researcher", "", "search_kb", `{"query":"refunds"}`)
		wantOutcome(t, "untyped error", res, audit.OutcomeFailed, reason.EffectFailed)
		d.noSecret(t, "tok_SECRET")
		if !strings.Contains(sink.String(), "tok_SECRET") {
			t.Errorf("the operator's log lacks the error's text: %s", sink.String())
		}
		d.setEffect("lookup_order", func(_ context.Context, inv Invocation) (blackboard.Payload, error) {
			return nil, Recordable(errors.New("no order " + inv.Args["order_id"].(string) + " in the CRM"))
		})
		res = d.call("t", "support", "refund", "lookup_order", `{"order_id":"`+secretOrder+`"}`)
		wantOutcome(t, "recordable error", res, audit.OutcomeFailed, reason.EffectFailed)
		if !strings.Contains(res.RootCause.Detail, "in the CRM") || !strings.Contains(res.RootCause.Detail, mask.Prefix) {
			t.Errorf("recordable error stored as %q, want its text with the order id masked", res.RootCause.Detail)
		}
		d.noSecret(t, secretOrder)
	}, withMasking, withLog(sink))
}
