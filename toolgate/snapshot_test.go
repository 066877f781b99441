package toolgate

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/internal/kernelhook"
	"github.com/blackboardkernel/bk/internal/snapshot"
	"github.com/blackboardkernel/bk/internal/telemetry"
	"github.com/blackboardkernel/bk/reason"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/canon"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/rules"
	"github.com/blackboardkernel/bk/store/memstore"
)

// policyRecords lists the policy snapshot records of the store.
func (d *desk) policyRecords() []blackboard.Record {
	return d.kinds(blackboard.Evidence, audit.KindPolicy)
}

// decodedPolicy is the gate's policy snapshot, decoded.
func decodedPolicy(t *testing.T, g *Gate) snapshot.Policy {
	t.Helper()
	p, err := snapshot.Decode(g.Policy())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The policy snapshot describes the tools, contracts, fallback and the
// kernel's rules as data, names code validators, and hashes canonically;
// New records it once per hash: a restarted gate with the same policy
// writes no second record, a changed one does.
func TestPolicySnapshot(t *testing.T) {
	rs, err := rules.New(rules.OnAction("refund_cap", "issue_refund", "action.amount <= 1000"))
	if err != nil {
		t.Fatal(err)
	}
	opaque := kernel.ValidatorFunc(func(context.Context, kernel.Candidate) kernel.Cause { return kernel.Cause{} })
	withValidators := func(su *setup) { su.cfg.Kernel.Validators = append(su.cfg.Kernel.Validators, rs, opaque) }
	onStores(t, func(t *testing.T, d *desk) {
		p := decodedPolicy(t, d.g)
		if len(p.Tools) != 3 || p.Tools[1].Name != "issue_refund" || p.Tools[1].Approval == nil || p.Tools[1].Approval.When != "amount > 500" ||
			!reflect.DeepEqual(p.Tools[1].Bindings, []snapshot.Binding{{Arg: "order_id", Percept: "order", Op: "equal"}, {Arg: "amount", Percept: "order", Op: "at_most"}}) || p.Tools[1].Result != "refund" || p.Tools[0].Requires != nil ||
			!json.Valid(p.Tools[0].Parameters) || !strings.Contains(string(p.Tools[0].Parameters), "order_id") {
			t.Errorf("tools: %+v", p.Tools)
		}
		if p.Fallback != kernel.FallbackQueueForReview || len(p.Contracts) != 2 || p.Contracts[0].Name != "researcher" {
			t.Errorf("policy: %+v", p)
		}
		if !reflect.DeepEqual(p.Rules, rs.Specs()) || len(p.Opaque) != 1 || p.Opaque[0] != "kernel.ValidatorFunc" {
			t.Errorf("rules %+v, opaque %v", p.Rules, p.Opaque)
		}
		h := d.g.Policy().Hash
		if !strings.HasPrefix(h, "sha256:") || len(h) != len("sha256:")+64 || p.Encode().Hash != h {
			t.Errorf("hash %q, decoded snapshot's %q", h, p.Encode().Hash)
		}
		recs := d.policyRecords()
		if len(recs) != 1 || recs[0].Provenance.TraceID != audit.PolicyTrace(kernelhook.Namespace(d.g.Kernel())) || recs[0].Provenance.Role != blackboard.RoleKernel || recs[0].Payload["hash"] != h {
			t.Fatalf("policy records: %+v", recs)
		}
		if d.g.policyID != recs[0].ID {
			t.Errorf("policy record %q, want %q", d.g.policyID, recs[0].ID)
		}
		// The record holds the policy: decoded, it hashes the same.
		raw, _ := json.Marshal(recs[0].Payload["policy"])
		var back snapshot.Policy
		if err := json.Unmarshal(raw, &back); err != nil || back.Encode().Hash != h {
			t.Errorf("recorded policy hashes %q, %v", back.Encode().Hash, err)
		}
		// A restart with the same policy, a contract's tools in another
		// order and one twice.
		g2 := d.gate(Config{Tools: d.tools, Contracts: map[string][]string{
			"support": {"issue_refund", "lookup_order", "issue_refund"}, "researcher": d.contracts["researcher"]}})
		if g2.Policy().Hash != h || len(d.policyRecords()) != 1 || g2.policyID != recs[0].ID {
			t.Errorf("restart: hash %q, %d records", g2.Policy().Hash, len(d.policyRecords()))
		}
		// A changed policy is a second record.
		g3 := d.gate(Config{Tools: d.tools, Contracts: map[string][]string{"support": {"lookup_order"}}})
		if g3.Policy().Hash == h || len(d.policyRecords()) != 2 {
			t.Errorf("changed policy: hash %q, %d records", g3.Policy().Hash, len(d.policyRecords()))
		}
		// Every decision record names the policy of the gate that wrote it.
		d.ground("t", "A1")
		d.refund("t", "A1", 100)
		d.call("t", "researcher", "", "issue_refund", `{}`)
		for _, dr := range d.decisions(audit.Query{TraceID: "t"}) {
			if dr.Context[keyPolicy] != h {
				t.Errorf("decision %s (%s) names policy %v", dr.ID, dr.Outcome, dr.Context[keyPolicy])
			}
		}
	}, withValidators)
}

// Policy returns a copy: changing it changes nothing in the gate.
func TestPolicyIsACopy(t *testing.T) {
	d := newDesk(t, memstore.New())
	p := d.g.Policy()
	p.JSON[0] = ' '
	if q := d.g.Policy(); q.JSON[0] != '{' || decodedPolicy(t, d.g).Tools[0].Name != "lookup_order" {
		t.Errorf("the gate's policy changed: %s", q.JSON)
	}
}

// New fails closed when it cannot record the policy snapshot.
func TestNewFailsWithoutPolicyRecord(t *testing.T) {
	s := memstore.New()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := New(context.Background(), Config{
		Kernel: kernel.Config{Store: s, BeliefSpecs: []kernel.BeliefSpec{{Kind: "refund_due", DependsOn: []string{"order"}}}},
		Tools:  deskTools(func(string) EffectFunc { return nil }),
	})
	if err == nil || !strings.Contains(err.Error(), "policy snapshot") {
		t.Errorf("New over a closed store: %v, want the policy snapshot's failure", err)
	}
}

// compiledContext writes a compiled context record in trace as the
// kernel's Governor does.
func (d *desk) compiledContext(trace string) string {
	d.t.Helper()
	rec, err := d.k.Governor().Append(d.ctx, kernel.Follow{Role: blackboard.RoleKernel, Entry: kernel.Entry{
		TraceID: trace, Slot: blackboard.Evidence, Kind: audit.KindCompiledContext, Payload: blackboard.Payload{"hash": "sha256:00"}}})
	if err != nil {
		d.t.Fatal(err)
	}
	return rec.ID
}

// A call naming its trace's compiled context carries it in each of its
// decision records and on its span.
func TestCallContextRecorded(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	d := newDesk(t, memstore.New(), func(su *setup) { su.cfg.Kernel.TracerProvider = tp })
	id := d.compiledContext("t")
	res, err := d.g.Call(d.ctx, Call{Tool: "lookup_order", Args: json.RawMessage(`{"order_id":"A1"}`), Caller: "support", TraceID: "t", Context: id})
	if err != nil {
		t.Fatal(err)
	}
	wantOutcome(t, "lookup", res, audit.OutcomeExecuted, reason.EffectSucceeded)
	drs := d.decisions(audit.Query{TraceID: "t"})
	if len(drs) != 2 {
		t.Fatalf("%d decision records, want 2", len(drs))
	}
	for _, dr := range drs {
		if dr.Context[keyContext] != id {
			t.Errorf("decision %s names context %v, want %s", dr.ID, dr.Context[keyContext], id)
		}
	}
	found := false
	for _, sp := range rec.Ended() {
		for _, a := range sp.Attributes() {
			if string(a.Key) == telemetry.AttrContext && a.Value.AsString() == id {
				found = true
			}
		}
	}
	if !found {
		t.Error("no span carries bk.context")
	}
}

// A forged reference to a compiled context: no record, a record of
// another kind, another trace's compiled context, and one written by a
// handle rather than the kernel. Each is CONTEXT_INVALID before the
// kernel, with a decision record that does not name it, and nothing runs.
func TestAttackForgedContextReference(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		other := d.compiledContext("other")
		lookup := d.call("t", "support", "", "lookup_order", `{"order_id":"A1"}`)
		forged, err := d.k.Handle(blackboard.RoleEvidence, "mallory").Write(d.ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Evidence,
			Kind: audit.KindCompiledContext, Payload: blackboard.Payload{"hash": "sha256:00"}})
		if err != nil {
			t.Fatal(err) // an evidence handle may write evidence of any kind, with its own role
		}
		refs := []struct{ id, why string }{
			{"evidence:t:999", "names no record"},
			{"not an id", "names no record"},
			{strings.TrimPrefix(lookup.DecisionID, "decision:"), "is no compiled_context record"},
			{other, "another trace's"},
			{forged, "not written by the kernel"},
		}
		calls := len(d.invocations("lookup_order"))
		for _, r := range refs {
			ref := r.id
			res, err := d.g.Call(d.ctx, Call{Tool: "lookup_order", Args: json.RawMessage(`{"order_id":"A2"}`), Caller: "support", TraceID: "t", Context: ref})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(res.RootCause.Detail, r.why) {
				t.Errorf("context %s refused for %q, want %q", ref, res.RootCause.Detail, r.why)
			}
			wantOutcome(t, "context "+ref, res, audit.OutcomeRefused, reason.ContextInvalid)
			rec, err := d.k.Reader().Get(d.ctx, strings.TrimPrefix(res.DecisionID, "decision:"))
			if err != nil {
				t.Fatal(err)
			}
			if dr, ok := audit.Of(rec); !ok || dr.Code != reason.ContextInvalid || dr.Context[keyContext] != nil {
				t.Errorf("refusal %+v", dr)
			}
		}
		if n := len(d.invocations("lookup_order")); n != calls {
			t.Errorf("%d lookups ran under a forged context", n-calls)
		}
		for _, dr := range d.decisions(audit.Query{TraceID: "t", Outcome: audit.OutcomeRefused}) {
			if dr.Code != reason.ContextInvalid || dr.Context[keyContext] != nil {
				t.Errorf("refusal %+v", dr)
			}
		}
	})
}

// Two applications with their own namespaces share a store: each gate
// records its policy snapshot in its namespace's own trace, and neither
// is refused for the other's (a trace belongs to one namespace).
func TestPolicyPerNamespace(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	for _, ns := range []string{"desk", "billing", ""} {
		g, err := New(ctx, Config{
			Kernel: kernel.Config{Store: s, Namespace: ns},
			Tools: []Tool{{Name: "lookup_order", Result: "order", ReadOnly: true,
				Effect: func(context.Context, Invocation) (blackboard.Payload, error) { return blackboard.Payload{}, nil }}},
		})
		if err != nil {
			t.Fatalf("gate of namespace %q: %v", ns, err)
		}
		rec, err := g.Kernel().Reader().Get(ctx, g.policyID)
		if err != nil || rec.Provenance.TraceID != audit.PolicyTrace(ns) || !audit.IsPolicyTrace(rec.Provenance.TraceID) || rec.Namespace != cmp.Or(ns, blackboard.DefaultNamespace) {
			t.Errorf("namespace %q: policy record %+v %v, want in %s", ns, rec, err, audit.PolicyTrace(ns))
		}
		g.Close()
	}
}

// audit.PolicyOf and snapshot.Decode read back exactly the snapshot a
// gate recorded, and refuse a record that is not the kernel's, one
// changed after it was recorded, and one of another shape that hashes
// right but reads otherwise.
func TestPolicyOf(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	g, err := New(ctx, Config{
		Kernel: kernel.Config{Store: s},
		Tools: []Tool{{Name: "lookup_order", Result: "order", ReadOnly: true,
			Effect: func(context.Context, Invocation) (blackboard.Payload, error) { return blackboard.Payload{}, nil }}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	rec, err := g.Kernel().Reader().Get(ctx, g.policyID)
	if err != nil {
		t.Fatal(err)
	}
	read := func(rec blackboard.Record) (snapshot.Policy, string, error) {
		ap, err := audit.PolicyOf(rec)
		if err != nil {
			return snapshot.Policy{}, ap.Hash, err
		}
		p, err := snapshot.Decode(ap)
		return p, ap.Hash, err
	}
	p, h, err := read(rec)
	if err != nil || h != g.Policy().Hash || p.Encode().Hash != h || p.Fallback != decodedPolicy(t, g).Fallback || len(p.Tools) != 1 || !p.Tools[0].ReadOnly {
		t.Fatalf("PolicyOf: %+v %s %v, want the gate's policy", p, h, err)
	}
	other := rec.Clone()
	other.Provenance.Role = blackboard.RoleTool
	if _, _, err := read(other); !errors.Is(err, audit.ErrPolicyRecord) {
		t.Errorf("a tool's record: %v, want ErrPolicyRecord", err)
	}
	tampered := rec.Clone()
	pol := tampered.Payload["policy"].(map[string]any)
	pol["fallback"] = "pay_anyway"
	if _, _, err := read(tampered); !errors.Is(err, audit.ErrPolicyTampered) {
		t.Errorf("a changed snapshot: %v, want ErrPolicyTampered", err)
	}
	shaped := rec.Clone()
	pol = shaped.Payload["policy"].(map[string]any)
	pol["future_field"] = true
	raw, _ := json.Marshal(pol)
	shaped.Payload["hash"], _ = canon.DigestJSON(raw)
	if _, _, err := read(shaped); !errors.Is(err, snapshot.ErrShape) {
		t.Errorf("another version's shape: %v, want snapshot.ErrShape", err)
	}
}
