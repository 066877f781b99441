package replay

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/failure"
	"github.com/blackboardkernel/bk/internal/rebuild"
	"github.com/blackboardkernel/bk/internal/snapshot"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/rules"
	"github.com/blackboardkernel/bk/toolgate"
)

func cmpNS(ns string) string {
	if ns == "" {
		return blackboard.DefaultNamespace
	}
	return ns
}

// policyOf reads a policy record's snapshot and checks it against its
// hash ([audit.PolicyOf], then [snapshot.Decode]). The mutation switch
// mutPolicyHash takes the snapshot as it reads, hash or not.
func policyOf(rec blackboard.Record) (snapshot.Policy, string, error) {
	ap, err := audit.PolicyOf(rec)
	if err == nil {
		var p snapshot.Policy
		p, err = snapshot.Decode(ap)
		if err == nil || !mutPolicyHash {
			return p, ap.Hash, err
		}
	}
	if !mutPolicyHash || errors.Is(err, audit.ErrPolicyRecord) {
		return snapshot.Policy{}, ap.Hash, err
	}
	raw, _ := json.Marshal(rec.Payload["policy"])
	var p snapshot.Policy
	return p, ap.Hash, json.Unmarshal(raw, &p)
}

// loadPolicies reads the snapshots the trace names, checks each against
// its hash, applies the options and builds a gate for each.
func (r *replayer) loadPolicies(ctx context.Context) error {
	found := map[string]bool{}
	for rec, err := range r.src.ListTrace(ctx, r.ns, audit.PolicyTrace(r.ns)) {
		if err != nil {
			return err
		}
		if cmpNS(rec.Namespace) != r.ns {
			continue
		}
		p, h, err := policyOf(rec)
		if errors.Is(err, audit.ErrPolicyRecord) || !slices.Contains(r.hashes, h) || found[h] {
			continue
		}
		found[h] = true
		switch {
		case errors.Is(err, audit.ErrPolicyTampered):
			return r.fail(ErrTampered, rec.ID, h, "the snapshot does not hash to its hash", err)
		case err != nil:
			return r.fail(ErrNotReproducible, rec.ID, h, "the snapshot was recorded in another shape than this version's", err)
		}
		if len(p.Opaque) > 0 {
			return r.fail(ErrNotReproducible, rec.ID, h, "it names validators that are code: "+strings.Join(p.Opaque, ", "), nil)
		}
		// A tool's action type is its name; a snapshot that records
		// another was written by a gate that could rename it.
		for _, t := range p.Tools {
			if t.Action != "" && t.Action != t.Name {
				return r.fail(ErrNotReproducible, rec.ID, h, "tool "+quote(t.Name)+" has the action type "+quote(t.Action)+", not its name", nil)
			}
		}
		r.policies[h] = p
	}
	r.nowMS = r.firstMS
	for _, h := range r.hashes {
		p, ok := r.policies[h]
		if !ok {
			return r.fail(ErrNoPolicy, "", h, "no policy record of namespace "+quote(r.ns)+" holds it", nil)
		}
		p, err := r.change(p, h)
		if err != nil {
			return err
		}
		g, err := r.newGate(ctx, p)
		if err != nil {
			if r.cfg.changes() {
				return r.fail(ErrInvalidOption, "", h, "the changed policy does not build", err)
			}
			return r.fail(ErrNotReproducible, "", h, "the policy does not build", err)
		}
		r.gates[h] = g
		if r.k == nil {
			r.k = g.Kernel()
		}
	}
	return nil
}

func (c *config) changes() bool { return len(c.rules) > 0 || len(c.tools) > 0 }

// change applies the options to p, the recorded policy with hash h.
func (r *replayer) change(p snapshot.Policy, h string) (snapshot.Policy, error) {
	for _, s := range r.cfg.rules {
		i := slices.IndexFunc(p.Rules, func(x rules.Spec) bool { return x.Name == s.Name })
		if s.On == "" && s.Target == "" {
			if i < 0 {
				return p, r.fail(ErrInvalidOption, "", h, "the policy has no rule "+quote(s.Name)+" whose expression to change", nil)
			}
			p.Rules[i].Expr = s.Expr
			continue
		}
		if i >= 0 {
			p.Rules[i] = s
		} else {
			p.Rules = append(p.Rules, s)
		}
	}
	for _, c := range r.cfg.tools {
		if !slices.ContainsFunc(p.Tools, func(t snapshot.Tool) bool { return t.Name == c.name }) {
			return p, r.fail(ErrInvalidOption, "", h, "the policy has no tool "+quote(c.name), nil)
		}
	}
	return p, nil
}

// newGate builds a gate from a policy snapshot: each tool as recorded,
// with the replay's effect, one attempt and no masked fields.
//
// Masked fields need no key: the records hold their keyed hashes, never
// the values, so the replayed tool declares none and takes the recorded
// hash as the value (its schema relaxed to a string). Every comparison the
// gate made on hashes (bindings, once-keys, the approval digest) compares
// the same hashes again.
func (r *replayer) newGate(ctx context.Context, p snapshot.Policy) (*toolgate.Gate, error) {
	tools := make([]toolgate.Tool, 0, len(p.Tools))
	for _, tp := range p.Tools {
		params, err := relax(tp.Parameters, tp.Masked)
		if err != nil {
			return nil, err
		}
		t := toolgate.Tool{Name: tp.Name, Description: "replayed from the store", Parameters: params,
			Requires: tp.Requires, Unbound: tp.Unbound, Scope: tp.Scope, Unscoped: tp.Unscoped, Idempotent: tp.Idempotent, ReadOnly: tp.ReadOnly, Result: tp.Result,
			ResultTTL: time.Duration(tp.ResultTTLMS) * time.Millisecond,
			Retry:     toolgate.RetryPolicy{MaxAttempts: 1}, Effect: r.effect}
		for _, b := range tp.Bindings {
			t.Bindings = append(t.Bindings, toolgate.Binding{Arg: b.Arg, Percept: b.Percept, Field: b.Field, Op: b.Op})
		}
		for _, d := range tp.Derives {
			t.Derives = append(t.Derives, toolgate.Derive{Belief: d.Belief, Value: d.Value, Fields: d.Fields})
		}
		if tp.Once != nil {
			t.Once = &kernel.OnceKey{Fields: tp.Once.Fields, Percept: tp.Once.Percept, Limit: tp.Once.Limit}
		}
		switch {
		case tp.Approval == nil:
		case tp.Approval.Always:
			t.Approval = "true"
		default:
			t.Approval = tp.Approval.When
		}
		for _, c := range r.cfg.tools {
			if c.name == tp.Name && c.change != nil {
				c.change(&t)
			}
		}
		for _, f := range tp.Masked {
			if strings.Contains(t.Approval, f) {
				r.note("tool %s: its approval rule reads the masked field %s, which the replay has only as its hash", tp.Name, f)
			}
		}
		tools = append(tools, t)
	}
	cfg := toolgate.Config{
		Kernel: kernel.Config{Store: r.store, Namespace: r.ns, Clock: r.clock},
		Tools:  tools,
	}
	groups := func(gs []snapshot.Group) map[string][]string {
		if len(gs) == 0 {
			return nil
		}
		m := make(map[string][]string, len(gs))
		for _, g := range gs {
			m[g.Name] = g.Tools
		}
		return m
	}
	cfg.Contracts, cfg.Intents = groups(p.Contracts), groups(p.Intents)
	if len(p.Rules) > 0 {
		rs, err := rules.New(p.Rules...)
		if err != nil {
			return nil, err
		}
		cfg.Kernel.Validators = []kernel.Validator{rs}
	}
	if p.Fallback != "" && p.Fallback != kernel.FallbackQueueForReview {
		// The snapshot names the fallback; its spec is the kernel owner's,
		// recorded nowhere: a safe fallback is what the gate requires.
		cfg.Kernel.ActionSpecs = []kernel.ActionSpec{{Type: p.Fallback, SafeFallback: true}}
		cfg.Fallback = p.Fallback
	}
	// A recorded policy is rebuilt as it was: its kernel's belief specs,
	// reservations and action specs are not in the snapshot.
	return toolgate.New(rebuild.Context(ctx), cfg)
}

// relax makes each masked property of a JSON Schema a string: the record
// holds the value's hash in its place.
func relax(params json.RawMessage, masked []string) (json.RawMessage, error) {
	if len(masked) == 0 || len(params) == 0 {
		return params, nil
	}
	var s map[string]any
	if err := json.Unmarshal(params, &s); err != nil {
		return nil, err
	}
	props, _ := s["properties"].(map[string]any)
	for _, f := range masked {
		if props != nil {
			props[f] = map[string]any{"type": "string"}
		}
	}
	return json.Marshal(s)
}

// effect is every replayed tool's effect: the recorded result of the
// source action being replayed, or its recorded failure. It calls
// nothing.
func (r *replayer) effect(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
	res, ok := r.results[r.current]
	if r.current == "" || !ok {
		r.note("%s: %s (%s) has no recorded result: the recorded run never ran it, and the replay fails it", inv.Tool, inv.ActionID, r.current)
		return nil, errNoResult
	}
	eff, _ := audit.EffectOf(res)
	if eff.Status == audit.StatusSucceeded {
		out := res.Payload.Clone()
		delete(out, audit.KeyEffect)
		return out, nil
	}
	switch eff.Code {
	case reason.RetriesExhausted:
		return nil, toolgate.Retryable(toolgate.Recordable(errors.New(eff.Error))) // one attempt allowed: exhausted at once
	case reason.OutputInvalid:
		return blackboard.Payload{audit.KeyEffect: "reserved"}, nil // what the gate refuses as output
	case reason.EffectFailed:
	default:
		r.note("%s: the recorded failure %s of %s is replayed as %s", inv.Tool, eff.Code, r.current, reason.EffectFailed)
	}
	// The recorded text is what the gate may store already: recorded
	// again as it is.
	if eff.ExecutionStatus != "" {
		return nil, toolgate.Recordable(failure.New(eff.ExecutionStatus, eff.Error).WithRetryable(false))
	}
	return nil, toolgate.Recordable(errors.New(eff.Error))
}

var errNoResult = errors.New("replay: no recorded result")
