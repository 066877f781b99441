package inspect

import (
	"fmt"

	"github.com/blackboardkernel/bk/audit"
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

// decisionOf decodes the decision record r holds ([audit.Of]).
func decisionOf(r *kernel.Record) (audit.Record, error) {
	d, ok := audit.Of(*r)
	if !ok {
		return audit.Record{}, fmt.Errorf("inspect: %s is not a decision record", r.ID)
	}
	return d, nil
}
