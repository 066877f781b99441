package toolgate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/kernelhook"
	"github.com/blackboardkernel/bk/internal/snapshot"
	"github.com/blackboardkernel/bk/rules"
)

// keyPolicy is the key under which a decision record's context, and a
// run controls record, name the policy snapshot's hash.
const keyPolicy = "policy"

// Policy returns the gate's policy snapshot ([audit.Policy]): its
// governance as data (what decides a call, so that a run can be replayed
// under it or under another) and its hash, which every decision record
// names under "policy" in its context. It holds no code: the kernel's
// validators that are rules are their specs, any other validator is only
// named. Effects, hints, retry policies and telemetry are not governance
// and are left out. The caller's to keep; safe for concurrent use.
func (g *Gate) Policy() audit.Policy {
	return audit.Policy{Hash: g.policyHash, JSON: slices.Clone(g.policyJSON)}
}

// snapshot builds the gate's policy snapshot from what New registered.
func (x *executor) snapshot(c Config) snapshot.Policy {
	g := x.g
	p := snapshot.Policy{Tools: make([]snapshot.Tool, 0, len(g.order)), Contracts: []snapshot.Group{}, Fallback: x.fallback}
	for _, e := range g.order {
		tp := snapshot.Tool{Name: e.Name, Action: e.action(), Parameters: slices.Clone(e.Parameters), Requires: slices.Clone(e.Requires),
			Unbound: e.Unbound, Scope: maps.Clone(e.Scope), Unscoped: e.Unscoped, Idempotent: e.Idempotent, ReadOnly: e.ReadOnly, Result: e.resultKind(), ResultTTLMS: e.ResultTTL.Milliseconds(),
			Masked: slices.Clone(e.Masked)}
		for _, b := range e.Bindings {
			tp.Bindings = append(tp.Bindings, snapshot.Binding{Arg: b.Arg, Percept: b.Percept, Field: b.Field, Op: b.Op})
		}
		for _, d := range e.Derives {
			tp.Derives = append(tp.Derives, snapshot.Derive{Belief: d.Belief, Value: d.Value, Fields: maps.Clone(d.Fields)})
		}
		if e.Once != nil {
			tp.Once = &snapshot.Once{Fields: slices.Clone(e.Once.Fields), Percept: e.Once.Percept, Limit: e.Once.Limit}
		}
		switch e.Approval {
		case "":
		case approvalAlways: // recorded as before the rule was a string
			tp.Approval = &snapshot.Approval{Always: true}
		default:
			tp.Approval = &snapshot.Approval{When: e.Approval}
		}
		p.Tools = append(p.Tools, tp)
	}
	sorted := func(tools []string) []string {
		s := slices.Clone(tools)
		slices.Sort(s)
		return slices.Compact(s)
	}
	// Sorted by name: a map has no order, and the hash must not vary.
	for _, name := range slices.Sorted(maps.Keys(c.Contracts)) {
		p.Contracts = append(p.Contracts, snapshot.Group{Name: name, Tools: sorted(c.Contracts[name])})
	}
	for _, name := range slices.Sorted(maps.Keys(c.Intents)) {
		p.Intents = append(p.Intents, snapshot.Group{Name: name, Tools: sorted(c.Intents[name])})
	}
	for _, v := range c.Kernel.Validators { // the owner's: the gate's own checks of the run controls and the request are not policy
		if r, ok := v.(*rules.Rules); ok {
			p.Rules = append(p.Rules, r.Specs()...)
		} else {
			p.Opaque = append(p.Opaque, fmt.Sprintf("%T", v))
		}
	}
	return p
}

// policyOnceKey is the once-key that records a policy snapshot once in
// the kernel's namespace.
func policyOnceKey(hash string) string {
	sum := sha256.Sum256([]byte(hash))
	return "toolgate/policy/" + hex.EncodeToString(sum[:])
}

// recordPolicy writes the policy snapshot's record, unless a gate over the
// store recorded the same hash in the namespace before, and returns its
// id.
func (x *executor) recordPolicy(ctx context.Context) (string, error) {
	g := x.g
	key := policyOnceKey(g.policyHash)
	if id, err := x.gov.ClaimedBy(ctx, key); err == nil {
		return id, nil
	} else if !errors.Is(err, blackboard.ErrNotFound) {
		return "", err
	}
	f, err := g.Policy().Follow(kernelhook.Namespace(x.k))
	if err != nil {
		return "", err
	}
	f.Entry.OnceKeys = []string{key}
	rec, err := x.planner.gov.Append(ctx, f)
	if errors.Is(err, blackboard.ErrDuplicateKey) {
		// Another gate recorded it meanwhile.
		return x.gov.ClaimedBy(ctx, key)
	}
	return rec.ID, err
}
