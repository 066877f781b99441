package toolgate

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/canon"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/rules"
)

// KindPolicy is the evidence kind of a policy snapshot's record: payload
// {"hash": [Policy.Hash], "policy": the [Policy]}. [New] writes one per
// distinct hash per namespace, in the namespace's trace [PolicyTrace].
const KindPolicy = "policy"

// policyTracePrefix begins the trace ids of [PolicyTrace]: reserved.
const policyTracePrefix = "bk.policy."

// PolicyTrace is the trace the policy snapshots of namespace ("" for
// [blackboard.DefaultNamespace]) are recorded in: one per namespace, as a
// trace belongs to one namespace, so that applications sharing a store
// each record their own. Trace ids beginning "bk.policy." are reserved
// for them.
func PolicyTrace(namespace string) string {
	return policyTracePrefix + cmp.Or(namespace, blackboard.DefaultNamespace)
}

// IsPolicyTrace reports whether traceID is a namespace's [PolicyTrace],
// a trace of the gate's own rather than of a run.
func IsPolicyTrace(traceID string) bool { return strings.HasPrefix(traceID, policyTracePrefix) }

// keyPolicy is the key under which a decision record's context, and a
// run controls record, name the policy snapshot's hash.
const keyPolicy = "policy"

// Policy is the gate's governance as data, the policy snapshot: what
// decides a call, so that a run can be replayed under it or under another
// and a decision record names what was in force ([Policy.Hash], under
// "policy" in its context). It holds no code: the kernel's validators that
// are rules ([rules.Rules]) are their specs, and any other validator is
// only named ([Policy.Opaque]). Effects, hints, retry policies and
// telemetry are not governance and are left out.
type Policy struct {
	// Tools are the registered tools, in registration order.
	Tools []ToolPolicy `json:"tools"`
	// Contracts and Intents are sorted by name, their tools by name.
	Contracts []Contract `json:"contracts"`
	Intents   []Intent   `json:"intents,omitempty"`
	// Fallback is the safe fallback action type of a denied or expired
	// approval.
	Fallback string `json:"fallback"`
	// Rules are the CEL rules of the kernel's validators that are
	// [rules.Rules], in the order they run.
	Rules []rules.Spec `json:"rules,omitempty"`
	// Opaque names the kernel's validators that are code (their Go
	// types), in the order they run: a replay under this policy needs the
	// same code.
	Opaque []string `json:"opaque,omitempty"`
}

// ToolPolicy is one tool's governance in a [Policy].
type ToolPolicy struct {
	Name   string `json:"name"`
	Action string `json:"action"`
	// Parameters is the JSON Schema calls are checked against
	// (INVALID_ARGUMENTS).
	Parameters json.RawMessage `json:"parameters"`
	Requires   []string        `json:"requires,omitempty"`
	Bindings   []Binding       `json:"bindings,omitempty"`
	Unbound    bool            `json:"unbound,omitempty"`
	// Scope and Unscoped are [Tool.Scope] and [Tool.Unscoped]: the
	// arguments that must lie within the trace's request, by resource
	// type.
	Scope      map[string]string `json:"scope,omitempty"`
	Unscoped   bool              `json:"unscoped,omitempty"`
	Once       *OncePolicy       `json:"once,omitempty"`
	Idempotent bool              `json:"idempotent,omitempty"`
	// ReadOnly is [Tool.ReadOnly]: the tool changes nothing outside.
	ReadOnly bool   `json:"read_only,omitempty"`
	Result   string `json:"result"`
	// ResultTTLMS is [Tool.ResultTTL] in milliseconds; 0 for none.
	ResultTTLMS int64 `json:"result_ttl_ms,omitempty"`
	// Approval is the approval rule; nil when the tool needs none.
	Approval *ApprovalPolicy `json:"approval,omitempty"`
	Masked   []string        `json:"masked,omitempty"`
	Derives  []Derive        `json:"derives,omitempty"`
}

// OncePolicy is a tool's once-key ([Tool.Once]) in a [Policy].
type OncePolicy struct {
	Fields  []string `json:"fields"`
	Percept string   `json:"percept,omitempty"`
	Limit   int      `json:"limit"`
}

// Hash returns "sha256:" and the hex SHA-256 of the policy's canonical
// JSON (canon): equal policies have equal hashes, whatever process or
// order of options built them.
func (p Policy) Hash() string {
	raw, err := json.Marshal(p)
	if err == nil {
		var d string
		if d, err = canon.DigestJSON(raw); err == nil {
			return d
		}
	}
	// A Policy is strings, bools and integers: it always encodes.
	panic("toolgate: policy does not encode: " + err.Error())
}

// Policy returns the gate's policy snapshot, the caller's to keep. Safe
// for concurrent use.
func (g *Gate) Policy() Policy {
	var p Policy
	if err := json.Unmarshal(g.policyJSON, &p); err != nil {
		panic("toolgate: policy snapshot does not decode: " + err.Error())
	}
	return p
}

// PolicyHash returns [Policy.Hash] of the gate's policy snapshot, as
// decision records name it. Safe for concurrent use.
func (g *Gate) PolicyHash() string { return g.policyHash }

// snapshot builds the gate's policy snapshot from what New registered.
func (x *executor) snapshot(c Config) Policy {
	g := x.g
	p := Policy{Tools: make([]ToolPolicy, 0, len(g.order)), Contracts: []Contract{}, Fallback: x.fallback}
	for _, e := range g.order {
		tp := ToolPolicy{Name: e.Name, Action: e.action(), Parameters: slices.Clone(e.Parameters), Requires: slices.Clone(e.Requires), Bindings: slices.Clone(e.Bindings),
			Unbound: e.Unbound, Scope: maps.Clone(e.Scope), Unscoped: e.Unscoped, Idempotent: e.Idempotent, ReadOnly: e.ReadOnly, Result: e.resultKind(), ResultTTLMS: e.ResultTTL.Milliseconds(),
			Masked: slices.Clone(e.Masked), Derives: slices.Clone(e.Derives)}
		if e.Once != nil {
			tp.Once = &OncePolicy{Fields: slices.Clone(e.Once.Fields), Percept: e.Once.Percept, Limit: e.Once.Limit}
		}
		if e.Approval.Always || e.Approval.When != "" {
			a := e.Approval
			tp.Approval = &a
		}
		p.Tools = append(p.Tools, tp)
	}
	sorted := func(tools []string) []string {
		s := slices.Clone(tools)
		slices.Sort(s)
		return slices.Compact(s)
	}
	for _, r := range c.Contracts {
		p.Contracts = append(p.Contracts, Contract{Name: r.Name, Tools: sorted(r.Tools)})
	}
	slices.SortFunc(p.Contracts, func(a, b Contract) int { return cmp.Compare(a.Name, b.Name) })
	for _, in := range c.Intents {
		p.Intents = append(p.Intents, Intent{Name: in.Name, Tools: sorted(in.Tools)})
	}
	slices.SortFunc(p.Intents, func(a, b Intent) int { return cmp.Compare(a.Name, b.Name) })
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
	var payload blackboard.Payload
	if err := json.Unmarshal(g.policyJSON, &payload); err != nil {
		return "", err
	}
	rec, err := x.planner.gov.Append(ctx, kernel.Follow{Role: blackboard.RoleKernel, Entry: kernel.Entry{
		TraceID: PolicyTrace(x.k.Namespace()), Slot: blackboard.Evidence, Kind: KindPolicy, OnceKeys: []string{key},
		Payload: blackboard.Payload{"hash": g.policyHash, "policy": map[string]any(payload)},
	}})
	if errors.Is(err, blackboard.ErrDuplicateKey) {
		// Another gate recorded it meanwhile.
		return x.gov.ClaimedBy(ctx, key)
	}
	return rec.ID, err
}

// The errors of [PolicyOf].
var (
	// ErrPolicyRecord: the record is not a policy snapshot's: another
	// slot or kind, or not written with the kernel's role.
	ErrPolicyRecord = errors.New("toolgate: not a policy record")
	// ErrPolicyTampered: the snapshot the record holds does not hash to
	// the hash it names: it changed after it was recorded.
	ErrPolicyTampered = errors.New("toolgate: the policy record does not hash to its hash")
	// errPolicyShape: the snapshot is intact but was recorded in another
	// shape than this version's [Policy], which would read it otherwise.
	errPolicyShape = errors.New("toolgate: the policy record is of another version's shape")
)

// PolicyOf reads the policy snapshot a [KindPolicy] record holds, and its
// hash. The record must be the kernel's ([ErrPolicyRecord]); what it holds
// must hash to the hash it names ([ErrPolicyTampered]) and decode to a
// [Policy] with that same hash (or it fails), so that what is read is
// exactly what was in force.
func PolicyOf(rec blackboard.Record) (Policy, string, error) {
	h, _ := rec.Payload["hash"].(string)
	if rec.Slot != blackboard.Evidence || rec.Kind != KindPolicy || rec.Provenance.Role != blackboard.RoleKernel {
		return Policy{}, h, fmt.Errorf("%w: %s", ErrPolicyRecord, rec.ID)
	}
	raw, err := json.Marshal(rec.Payload["policy"])
	var got string
	if err == nil {
		got, err = canon.DigestJSON(raw)
	}
	if err != nil || got != h {
		return Policy{}, h, fmt.Errorf("%w: %s names %s, holds %s", ErrPolicyTampered, rec.ID, h, got)
	}
	var p Policy
	if err := json.Unmarshal(raw, &p); err != nil || p.Hash() != h {
		return Policy{}, h, fmt.Errorf("%w: %s", errPolicyShape, rec.ID)
	}
	return p, h, nil
}
