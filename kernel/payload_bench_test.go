package kernel

import (
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
)

// episodePayloads are the shapes an episode of the study's kernel agent
// writes, the calls that dominate normalisation's cost in the bench.
func episodePayloads() []blackboard.Payload {
	return []blackboard.Payload{
		{keyValue: true, keyDependsOn: []any{"charge"}},
		{keySteps: []any{map[string]any{keyAction: "refund", keyRequiresBeliefs: []any{"refund_due"}, "is_duplicate": false}}},
		{"charge_id": "ch_1001", "amount": 129.99, "currency": "usd", "status": "disputed", "customer_id": "cus_77",
			keyStale: false, keyConflict: false, keyLowConfidence: false},
		{"type": "refund", "charge_id": "ch_1001", "amount": 129.99, "reason": "duplicate", "is_duplicate": true,
			keyRequiresBeliefs: []any{"refund_due"}},
		{"type": FallbackQueueForReview, keyReason: "STALE_DATA"},
	}
}

func BenchmarkNormalizePayload(b *testing.B) {
	ps := episodePayloads()
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range ps {
			if _, err := normalizePayload(p, 65536); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkConstraintCanonical(b *testing.B) {
	c := Constraint{Name: "no_duplicate_refund", Enabled: true, BlocksField: "is_duplicate", BindPercept: "refund_seen", AppliesTo: []string{"refund"}}
	b.ReportAllocs()
	for b.Loop() {
		if !c.canonical(65536) {
			b.Fatal("not canonical")
		}
	}
}

func BenchmarkJSONString(b *testing.B) {
	var strs []string
	for _, p := range episodePayloads() {
		for k, v := range p {
			strs = append(strs, k)
			if s, ok := v.(string); ok {
				strs = append(strs, s)
			}
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, s := range strs {
			jsonString(s)
		}
	}
}
