package pack

import (
	"context"
	"encoding/json"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
)

// Record writes the compiled context as an evidence record of kind [audit.KindCompiledContext]
// in the run's trace, with the kernel's role, through g (the gate's
// governance capability: no handle can forge one), and returns its id.
// Its payload is the whole compiled context (see [Pack]) with its hash;
// its input refs are the records it shows (evidence and memory). It fails with [ErrInvalid] for a pack that did
// not come from [Compiler.Compile], and with g's errors.
func (p *Pack) Record(ctx context.Context, g *kernel.Governor) (string, error) {
	if p == nil || p.traceID == "" || p.Hash == "" {
		return "", newErr("record", "", ErrInvalid, "not a compiled pack")
	}
	if g == nil {
		return "", newErr("record", "", ErrInvalid, "nil governor")
	}
	payload, err := p.payload()
	if err != nil {
		return "", err
	}
	rec, err := g.Append(ctx, kernel.Follow{Role: blackboard.RoleKernel, Entry: kernel.Entry{
		TraceID: p.traceID, Slot: blackboard.Evidence, Kind: audit.KindCompiledContext, Payload: payload,
		InputRefs: dedupe(p.refs),
	}})
	if err != nil {
		return "", err
	}
	return rec.ID, nil
}

// payload is the record's payload: the pack's value and its hash, as
// JSON decodes them.
func (p *Pack) payload() (map[string]any, error) {
	v := p.value()
	v["hash"] = p.Hash
	enc, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var payload map[string]any
	if err := json.Unmarshal(enc, &payload); err != nil {
		return nil, err
	}
	return payload, nil
}

// value is the pack as the JSON value its encoding holds (without the
// hash), built directly: [canon.Digest] of it is the hash.
func (p *Pack) value() map[string]any {
	m := map[string]any{"encoding": p.Encoding, "window": p.Window, "tokens": p.Tokens, "mode": p.Mode, "prompt": p.Prompt}
	put := func(m map[string]any, key string, v string) {
		if v != "" {
			m[key] = v
		}
	}
	list := func(m map[string]any, key string, v []string) {
		if len(v) > 0 {
			m[key] = v
		}
	}
	put(m, "intent", p.Intent)
	put(m, "role", p.Role)
	put(m, "policy", p.Policy)
	secs := make([]any, len(p.sections))
	for i, s := range p.sections {
		secs[i] = map[string]any{"name": s.Name, "share": s.Share, "budget": s.Budget, "tokens": s.Tokens}
	}
	m["sections"] = secs
	mf := &p.Manifest
	pol := map[string]any{}
	put(pol, "hash", mf.Policy.Hash)
	list(pol, "rules", mf.Policy.Rules)
	list(pol, "approval", mf.Policy.Approval)
	list(pol, "prohibited", mf.Policy.Prohibited)
	list(pol, "must_refuse", mf.Policy.MustRefuse)
	list(pol, "must_escalate", mf.Policy.MustEscalate)
	ev := make([]any, len(mf.evidence))
	for i, e := range mf.evidence {
		x := map[string]any{"id": e.ID, "slot": e.Slot, "kind": e.Kind, "age_ms": e.AgeMS, "freshness": e.Freshness}
		put(x, "belief", e.Belief)
		if e.TTLMS != 0 {
			x["ttl_ms"] = e.TTLMS
		}
		list(x, "flags", e.Flags)
		list(x, "refs", e.Refs)
		ev[i] = x
	}
	mem := make([]any, len(mf.memory))
	for i, r := range mf.memory {
		mem[i] = map[string]any{"id": r.ID, "slot": r.Slot, "kind": r.Kind, "age_ms": r.AgeMS}
	}
	ctl := map[string]any{"mode": mf.controls.Mode}
	if len(mf.controls.Budgets) > 0 {
		b := make([]any, len(mf.controls.Budgets))
		for i, l := range mf.controls.Budgets {
			b[i] = map[string]any{"resource": l.Resource, "left": l.Left}
		}
		ctl["budgets"] = b
	}
	list(ctl, "approval", mf.controls.Approval)
	cuts := make([]any, len(mf.cuts))
	for i, c := range mf.cuts {
		cuts[i] = map[string]any{"section": c.Section, "item": c.Item, "tokens": c.Tokens, "reason": c.Reason}
	}
	tools := mf.Tools
	if tools == nil {
		tools = []string{}
	}
	m["manifest"] = map[string]any{"policy": pol, "tools": tools, "evidence": ev, "memory": mem, "controls": ctl, "cuts": cuts}
	return m
}

func dedupe(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
