package toolgate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/toolgate"
)

// envSessionSizes names the environment variable that sets the session
// lengths [benchSession] measures: a comma-separated list of call numbers,
// for example "1,1000,10000,100000". Without it the lengths are
// [defaultSessionSizes].
const envSessionSizes = "BK_SESSION_SIZES"

// defaultSessionSizes returns the session lengths [benchSession] measures
// when [envSessionSizes] is not set, 1, 10 and 100: short enough that
// `go test -run '^$' -bench Session ./...` builds every session in a few
// minutes on today's code, whose cost per call grows with its session.
func defaultSessionSizes() []int { return []int{1, 10, 100} }

// sessionSizes returns the session lengths named by [envSessionSizes], or
// [defaultSessionSizes]. It fails tb on a value that is not a list of
// positive integers.
func sessionSizes(tb testing.TB) []int {
	tb.Helper()
	v := strings.TrimSpace(os.Getenv(envSessionSizes))
	if v == "" {
		return defaultSessionSizes()
	}
	var out []int
	for f := range strings.SplitSeq(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			tb.Fatalf("%s=%q: want a comma-separated list of positive integers", envSessionSizes, v)
		}
		out = append(out, n)
	}
	return out
}

// sessionFlow is one unit of work an agent repeats in a session, as
// [sessionDesk] runs it.
type sessionFlow string

// The flows [benchSession] measures.
const (
	// flowReadOnly is one executed call of a read-only tool (lookup_order)
	// through toolgate.Gate.Call.
	flowReadOnly sessionFlow = "readonly"
	// flowRefund is the refund flow: a lookup_order call, the refund_due
	// belief committed on the order it recorded, and an issue_refund call
	// once-keyed by the order, each of the three executed or committed.
	flowRefund sessionFlow = "refund"
)

// sessionFlows returns the flows [benchSession] measures, in order.
func sessionFlows() []sessionFlow { return []sessionFlow{flowReadOnly, flowRefund} }

const (
	sessionOrderSchema  = `{"type":"object","properties":{"order_id":{"type":"string"}},"required":["order_id"],"additionalProperties":false}`
	sessionRefundSchema = `{"type":"object","properties":{"order_id":{"type":"string"},"amount":{"type":"number"}},"required":["order_id","amount"],"additionalProperties":false}`
)

// sessionDesk is a support desk over one store, for measuring what a call
// costs as its session grows: a kernel, a gate with a read-only
// lookup_order tool and an issue_refund tool that rests on the refund_due
// belief (bound to the order it was committed on, and once-keyed by the
// order), a support role allowed both, and an analyst that commits the
// belief. The tools' effects answer at once, so its figures are the
// kernel's, the gate's and the store's.
type sessionDesk struct {
	// Gate is the desk's tool gate; its kernel ([toolgate.Gate.Kernel]) is
	// on the store passed to [newSessionDesk].
	Gate *toolgate.Gate

	analyst *kernel.Proposer
}

// newSessionDesk returns a desk over s. It fails tb if the gate cannot be
// built.
func newSessionDesk(tb testing.TB, s store.Store) *sessionDesk {
	tb.Helper()
	tools := []toolgate.Tool{
		{Name: "lookup_order", Description: "Look up an order by id.", ReadOnly: true, Parameters: json.RawMessage(sessionOrderSchema), Result: "order",
			Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
				return blackboard.Payload{"order_id": inv.Args["order_id"], "amount": 900.0, "refundable": true}, nil
			}},
		{Unscoped: true, Name: "issue_refund", Description: "Refund an order.", Parameters: json.RawMessage(sessionRefundSchema), Result: "refund",
			Requires: []string{"refund_due"},
			Bindings: []toolgate.Binding{{Arg: "order_id", Percept: "order", Op: "equal"}, {Arg: "amount", Percept: "order", Op: "at_most"}},
			Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
				return blackboard.Payload{"refund_id": "re_" + fmt.Sprint(inv.Args["order_id"]), "amount": inv.Args["amount"]}, nil
			}},
	}
	tools[1].Once = &kernel.OnceKey{Fields: []string{"order_id"}}
	g, err := toolgate.New(context.Background(), toolgate.Config{
		Kernel: kernel.Config{
			Store:       s,
			BeliefSpecs: []kernel.BeliefSpec{{Kind: "refund_due", DependsOn: []string{"order"}}},
		},
		Tools:     tools,
		Contracts: map[string][]string{"support": {"lookup_order", "issue_refund"}},
	})
	if err != nil {
		tb.Fatalf("toolgate.New: %v", err)
	}
	return &sessionDesk{Gate: g, analyst: g.Kernel().Proposer(blackboard.RolePlanner, "analyst")}
}

// ReadOnly makes the read-only call lookup_order on order in trace and
// returns an error unless it executed.
func (d *sessionDesk) ReadOnly(ctx context.Context, trace, order string) error {
	res, err := d.Gate.Call(ctx, toolgate.Call{ID: "call_lookup", Tool: "lookup_order", Caller: "support", TraceID: trace,
		Args: json.RawMessage(`{"order_id":"` + order + `"}`)})
	if err != nil {
		return fmt.Errorf("lookup_order: %w", err)
	}
	if res.Outcome != audit.OutcomeExecuted {
		return fmt.Errorf("lookup_order: %s %s (%s)", res.Outcome, res.Code, res.RootCause.Detail)
	}
	return nil
}

// Refund runs the refund flow on order in trace: the lookup, the
// refund_due belief on the order it recorded, and a refund of 100 keyed
// by the order. It returns an error unless each step executed or
// committed; each order can be refunded once, so a session uses a new
// order for every flow.
func (d *sessionDesk) Refund(ctx context.Context, trace, order string) error {
	if err := d.ReadOnly(ctx, trace, order); err != nil {
		return err
	}
	dec, err := d.analyst.Submit(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"order"}}})
	if err != nil {
		return fmt.Errorf("belief refund_due: %w", err)
	}
	if !dec.Committed() {
		return fmt.Errorf("belief refund_due: %s", dec.Code)
	}
	res, err := d.Gate.Call(ctx, toolgate.Call{ID: "call_refund", Tool: "issue_refund", Caller: "support", TraceID: trace,
		Args: json.RawMessage(`{"order_id":"` + order + `","amount":100}`)})
	if err != nil {
		return fmt.Errorf("issue_refund: %w", err)
	}
	if res.Outcome != audit.OutcomeExecuted {
		return fmt.Errorf("issue_refund: %s %s (%s)", res.Outcome, res.Code, res.RootCause.Detail)
	}
	return nil
}

// Run runs flow once in trace; n numbers the flow within the trace and,
// with the trace, names its order, so that every refund is on an order of
// its own (once-keys hold across traces).
func (d *sessionDesk) Run(ctx context.Context, flow sessionFlow, trace string, n int) error {
	order := trace + "-" + strconv.Itoa(n)
	switch flow {
	case flowReadOnly:
		return d.ReadOnly(ctx, trace, order)
	case flowRefund:
		return d.Refund(ctx, trace, order)
	}
	return fmt.Errorf("unknown session flow %q", flow)
}

// benchSession measures, for each flow of [sessionFlows] and each session
// length n of [sessionSizes], the cost of the n-th flow of one trace, on a
// store newStore returns (a new, empty one for each flow and length). The
// sub-benchmarks are named flow/n=N.
//
// The first n-1 flows of the trace run before the timer starts. Iteration
// i then measures flow n+i of that trace, and once the trace has grown by
// a tenth of n past n (at every iteration when n < 10) the timer stops
// while a new trace is built up to n-1 flows, so every figure is the cost
// of a flow between the n-th and the 1.1·n-th of its session. Use a
// -benchtime of a few iterations (for example 20x) on a slow store: today
// building a session takes time that grows with the square of its length.
func benchSession(b *testing.B, newStore func(testing.TB) store.Store) {
	for _, flow := range sessionFlows() {
		b.Run(string(flow), func(b *testing.B) {
			for _, n := range sessionSizes(b) {
				b.Run("n="+strconv.Itoa(n), func(b *testing.B) { benchSessionAt(b, newStore(b), flow, n) })
			}
		})
	}
}

func benchSessionAt(b *testing.B, s store.Store, flow sessionFlow, n int) {
	ctx := context.Background()
	d := newSessionDesk(b, s)
	traces := 0
	var trace string
	next := 0 // the number of the next flow in trace
	build := func() {
		traces++
		trace = "session-" + strconv.Itoa(traces)
		for next = 1; next < n; next++ {
			if err := d.Run(ctx, flow, trace, next); err != nil {
				b.Fatalf("building %s to %d flows: flow %d: %v", trace, n-1, next, err)
			}
		}
	}
	build()
	b.ReportAllocs()
	for b.Loop() {
		if next > n+n/10 {
			b.StopTimer()
			build()
			b.StartTimer()
		}
		if err := d.Run(ctx, flow, trace, next); err != nil {
			b.Fatalf("%s flow %d: %v", trace, next, err)
		}
		next++
	}
}
