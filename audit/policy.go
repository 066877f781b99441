package audit

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/canon"
	"github.com/blackboardkernel/bk/kernel"
)

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

// Policy is a policy snapshot as its record holds it: the tool gate's
// governance as data (its tools' schemas, grounding, once-keys, scope and
// approval rules, its contracts, intents, fallback and the kernel's
// rules; toolgate's Gate.Policy), and its hash, which every decision
// record names under "policy" in its context. The snapshot is JSON, read
// by whatever interprets it (a replay rebuilds a gate from it); the hash
// is what says which one was in force. A value; safe to share.
type Policy struct {
	// Hash is "sha256:" and the hex SHA-256 of JSON's canonical form
	// (canon): equal snapshots have equal hashes.
	Hash string
	// JSON is the snapshot.
	JSON json.RawMessage
}

// Follow encodes p as the evidence record of kind [KindPolicy] the
// kernel appends with its role in the [PolicyTrace] of namespace: payload
// {"hash": p.Hash, "policy": the snapshot}. The gate adds the once-key
// that records one snapshot per hash. It fails with
// [blackboard.ErrInvalidPayload] when p.JSON is no JSON object.
func (p Policy) Follow(namespace string) (kernel.Follow, error) {
	var body map[string]any
	if err := json.Unmarshal(p.JSON, &body); err != nil || body == nil {
		return kernel.Follow{}, fmt.Errorf("%w: audit: a policy snapshot is a JSON object", blackboard.ErrInvalidPayload)
	}
	return kernel.Follow{Role: blackboard.RoleKernel, Entry: kernel.Entry{
		TraceID: PolicyTrace(namespace), Slot: blackboard.Evidence, Kind: KindPolicy,
		Payload: blackboard.Payload{"hash": p.Hash, "policy": body},
	}}, nil
}

// The errors of [PolicyOf].
var (
	// ErrPolicyRecord: the record is not a policy snapshot's: another
	// slot or kind, or not written with the kernel's role.
	ErrPolicyRecord = errors.New("audit: not a policy record")
	// ErrPolicyTampered: the snapshot the record holds does not hash to
	// the hash it names: it changed after it was recorded.
	ErrPolicyTampered = errors.New("audit: the policy record does not hash to its hash")
)

// PolicyOf decodes the policy snapshot a [KindPolicy] record holds. The
// record must be the kernel's ([ErrPolicyRecord]) and what it holds must
// hash to the hash it names ([ErrPolicyTampered]), so that what is read
// is exactly what was in force. On either error the returned Policy
// still has the hash the record names (and, when tampered, the JSON it
// holds).
func PolicyOf(rec blackboard.Record) (Policy, error) {
	h, _ := rec.Payload["hash"].(string)
	if rec.Slot != blackboard.Evidence || rec.Kind != KindPolicy || rec.Provenance.Role != blackboard.RoleKernel {
		return Policy{Hash: h}, fmt.Errorf("%w: %s", ErrPolicyRecord, rec.ID)
	}
	raw, err := json.Marshal(rec.Payload["policy"])
	var got string
	if err == nil {
		got, err = canon.DigestJSON(raw)
	}
	if err != nil || got != h {
		return Policy{Hash: h, JSON: raw}, fmt.Errorf("%w: %s names %s, holds %s", ErrPolicyTampered, rec.ID, h, got)
	}
	return Policy{Hash: h, JSON: raw}, nil
}
