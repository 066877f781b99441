package inspect

import (
	"fmt"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
)

// list returns p[key] as the []any that the kernel's normalisation makes
// of every list (nil when absent or not a list).
func list(p blackboard.Payload, key string) []any {
	l, _ := p[key].([]any)
	return l
}

// decisionOf decodes the decision record r holds ([audit.Of]).
func decisionOf(r *blackboard.Record) (audit.Entry, error) {
	d, ok := audit.Of(*r)
	if !ok {
		return audit.Entry{}, fmt.Errorf("inspect: %s is not a decision record", r.ID)
	}
	return d, nil
}
