package inspect

import (
	"encoding/json"
	"fmt"

	"github.com/blackboardkernel/bk/kernel"
)

// list returns p[key] as the []any that the kernel's normalisation makes
// of every list (nil when absent or not a list).
func list(p kernel.Payload, key string) []any {
	l, _ := p[key].([]any)
	return l
}

// nsOf is the namespace a store keeps for ns.
func nsOf(ns string) string {
	if ns == "" {
		return kernel.DefaultNamespace
	}
	return ns
}

// decisionRecordOf decodes a decision record from the evidence record
// that holds it, through the JSON layout kernel.DecisionRecord declares.
func decisionRecordOf(r *kernel.Record) (kernel.DecisionRecord, error) {
	var d kernel.DecisionRecord
	enc, err := json.Marshal(map[string]any(r.Payload))
	if err == nil {
		err = json.Unmarshal(enc, &d)
	}
	if err != nil {
		return kernel.DecisionRecord{}, fmt.Errorf("inspect: decision record %s: %w", r.ID, err)
	}
	d.RecordID = r.ID
	return d, nil
}
