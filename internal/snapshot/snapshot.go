package snapshot

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/canon"
	"github.com/blackboardkernel/bk/rules"
)

// Policy is the gate's governance as data: what decides a call, so that
// a run can be replayed under it or under another. It holds no code: the
// kernel's validators that are rules are their specs, and any other
// validator is only named (Opaque). Effects, hints, retry policies and
// telemetry are not governance and are left out.
type Policy struct {
	// Tools are the registered tools, in registration order.
	Tools []Tool `json:"tools"`
	// Contracts and Intents are sorted by name, their tools by name.
	Contracts []Group `json:"contracts"`
	Intents   []Group `json:"intents,omitempty"`
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

// Group is a contract (a caller and the tools it may call) or an intent
// (a kind of request and the tools that may serve it).
type Group struct {
	Name  string   `json:"name"`
	Tools []string `json:"tools"`
}

// ScopePrincipal is the resource type of a tool's Scope that ties an
// argument to the request's principal itself, not to one of its
// resources: the gate checks it, and the invariant checker reads it back.
const ScopePrincipal = "principal"

// Tool is one tool's governance: toolgate's Tool without its effect,
// description, hints and retry policy.
type Tool struct {
	Name   string `json:"name"`
	Action string `json:"action"`
	// Parameters is the JSON Schema calls are checked against.
	Parameters json.RawMessage `json:"parameters"`
	Requires   []string        `json:"requires,omitempty"`
	Bindings   []Binding       `json:"bindings,omitempty"`
	Unbound    bool            `json:"unbound,omitempty"`
	// Scope and Unscoped: the arguments that must lie within the trace's
	// request, by resource type ([ScopePrincipal]: the principal itself).
	Scope      map[string]string `json:"scope,omitempty"`
	Unscoped   bool              `json:"unscoped,omitempty"`
	Once       *Once             `json:"once,omitempty"`
	Idempotent bool              `json:"idempotent,omitempty"`
	// ReadOnly: the tool changes nothing outside.
	ReadOnly bool   `json:"read_only,omitempty"`
	Result   string `json:"result"`
	// ResultTTLMS is the result's TTL in milliseconds; 0 for none.
	ResultTTLMS int64 `json:"result_ttl_ms,omitempty"`
	// Approval is the approval rule; nil when the tool needs none.
	Approval *Approval `json:"approval,omitempty"`
	Masked   []string  `json:"masked,omitempty"`
	Derives  []Derive  `json:"derives,omitempty"`
}

// Once is a tool's once-key.
type Once struct {
	Fields  []string `json:"fields"`
	Percept string   `json:"percept,omitempty"`
	Limit   int      `json:"limit"`
}

// Binding is a tool's binding of an argument to an observed field
// (toolgate's Binding).
type Binding struct {
	Arg     string `json:"arg"`
	Percept string `json:"percept"`
	Field   string `json:"field,omitempty"`
	Op      string `json:"op,omitempty"`
}

// Derive is a belief a tool's result derives (toolgate's Derive).
type Derive struct {
	Belief string            `json:"belief"`
	Value  string            `json:"value"`
	Fields map[string]string `json:"fields,omitempty"`
}

// Approval is a tool's approval rule (toolgate's Tool.Approval): Always
// for the rule "true", else the rule as When. The two fields keep the
// hashes of policies recorded before the rule was one string.
type Approval struct {
	Always bool   `json:"always,omitempty"`
	When   string `json:"when,omitempty"`
}

// Encode returns the snapshot as its record holds it, with its hash:
// "sha256:" and the hex SHA-256 of its canonical JSON (canon), equal for
// equal policies whatever process or order of options built them.
func (p Policy) Encode() audit.Policy {
	raw, err := json.Marshal(p)
	if err == nil {
		var d string
		if d, err = canon.DigestJSON(raw); err == nil {
			return audit.Policy{Hash: d, JSON: raw}
		}
	}
	// A Policy is strings, bools and integers: it always encodes.
	panic("snapshot: policy does not encode: " + err.Error())
}

// ErrShape: the snapshot is intact but was recorded in another shape than
// this version's [Policy], which would read it otherwise.
var ErrShape = errors.New("snapshot: the policy record is of another version's shape")

// Decode reads p's snapshot. It must decode to a [Policy] with p's hash
// ([ErrShape]), so that what is read is exactly what was in force; check
// the record first with [audit.PolicyOf].
func Decode(p audit.Policy) (Policy, error) {
	var out Policy
	if err := json.Unmarshal(p.JSON, &out); err != nil || out.Encode().Hash != p.Hash {
		return Policy{}, fmt.Errorf("%w: %s", ErrShape, p.Hash)
	}
	return out, nil
}
