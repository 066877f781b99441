package orchestrator_test

import (
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/orchestrator"
)

// Progress, which the loop guard's idle rounds count, is a change in the
// committed state: a pending proposal is none.
func TestProgressed(t *testing.T) {
	view := func(kv ...any) kernel.View {
		v := kernel.View{TraceID: "t", Committed: map[blackboard.Slot]map[string]blackboard.Payload{}}
		for i := 0; i+2 < len(kv)+1; i += 3 {
			slot := kv[i].(blackboard.Slot)
			if v.Committed[slot] == nil {
				v.Committed[slot] = map[string]blackboard.Payload{}
			}
			v.Committed[slot][kv[i+1].(string)] = kv[i+2].(blackboard.Payload)
		}
		return v
	}
	a := view(blackboard.Percepts, "order", blackboard.Payload{"id": "A1"}, blackboard.Beliefs, "refund_due", blackboard.Payload{"value": true})
	same := view(blackboard.Beliefs, "refund_due", blackboard.Payload{"value": true}, blackboard.Percepts, "order", blackboard.Payload{"id": "A1"})
	same.Pending = []blackboard.Record{{ID: "beliefs:t:9"}} // a new proposal is not progress
	for _, tc := range []struct {
		name         string
		before, then kernel.View
		want         bool
	}{
		{"nothing changed", a, same, false},
		{"empty views", kernel.View{}, view(), false},
		{"a kind committed", a, view(blackboard.Percepts, "order", blackboard.Payload{"id": "A1"}, blackboard.Beliefs, "refund_due", blackboard.Payload{"value": true}, blackboard.Plans, "plan", blackboard.Payload{}), true},
		{"a kind gone", a, view(blackboard.Percepts, "order", blackboard.Payload{"id": "A1"}), true},
		{"a payload changed", a, view(blackboard.Percepts, "order", blackboard.Payload{"id": "A2"}, blackboard.Beliefs, "refund_due", blackboard.Payload{"value": true}), true},
		{"a kind replaced", a, view(blackboard.Percepts, "order", blackboard.Payload{"id": "A1"}, blackboard.Beliefs, "other", blackboard.Payload{"value": true}), true},
	} {
		if got := orchestrator.Progressed(tc.before, tc.then); got != tc.want {
			t.Errorf("%s: Progressed = %v, want %v", tc.name, got, tc.want)
		}
	}
}
