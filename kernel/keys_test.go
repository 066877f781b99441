package kernel_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
)

func TestOnceKeyOf(t *testing.T) {
	t.Run("payload field", func(t *testing.T) {
		attack(t, func(t *testing.T, a *arena) {
			a.groundRefund("t", "A1")
			d := a.refund("t", "order_id", "A1")
			if !d.Committed() {
				t.Fatalf("refund: %s", d.Code)
			}
			key, err := a.k.Governor().OnceKeyOf(a.ctx, d.CommittedID)
			if err != nil || !strings.Contains(key, `"A1"`) || !strings.HasPrefix(key, `["shop","issue_refund",`) {
				t.Fatalf("OnceKeyOf: %q %v", key, err)
			}
			if id, err := a.k.Governor().ClaimedBy(a.ctx, key); err != nil || id != d.CommittedID {
				t.Errorf("ClaimedBy(%q) = %q %v, want %s", key, id, err, d.CommittedID)
			}
		}, kernel.Config{Namespace: "shop", ActionSpecs: []kernel.ActionSpec{{Type: "issue_refund", MinBeliefs: []string{"refund_due"},
			Once: &kernel.OnceKey{Fields: []string{"order_id"}}}}})
	})
	t.Run("percept field and limit", func(t *testing.T) {
		attack(t, func(t *testing.T, a *arena) {
			keys := map[string]bool{}
			for _, trace := range []string{"t1", "t2"} {
				a.groundRefund(trace, "A1")
				d := a.refund(trace)
				if !d.Committed() {
					t.Fatalf("refund in %s: %s", trace, d.Code)
				}
				// A newer observation of another order does not hide the
				// one the action was keyed on.
				a.percept(trace, "charge", blackboard.Payload{"order_id": "B2", "amount": 5.0}, nil, 0)
				key, err := a.k.Governor().OnceKeyOf(a.ctx, d.CommittedID)
				if err != nil || !strings.Contains(key, `"A1"`) {
					t.Fatalf("OnceKeyOf in %s: %q %v", trace, key, err)
				}
				keys[key] = true
			}
			if len(keys) != 2 {
				t.Errorf("two commits under one key's limit share a key: %v", keys)
			}
		}, kernel.Config{ActionSpecs: []kernel.ActionSpec{{Type: "issue_refund", Once: &kernel.OnceKey{Fields: []string{"order_id"}, Percept: "charge", Limit: 2}}}})
	})
	t.Run("none", func(t *testing.T) {
		attack(t, func(t *testing.T, a *arena) {
			a.groundRefund("t", "A1")
			d := a.refund("t")
			if _, err := a.k.Governor().OnceKeyOf(a.ctx, d.CommittedID); !errors.Is(err, blackboard.ErrNotFound) {
				t.Errorf("action without once-key: %v, want ErrNotFound", err)
			}
			if _, err := a.k.Governor().OnceKeyOf(a.ctx, "percepts:t:1"); !errors.Is(err, kernel.ErrInvalidReference) {
				t.Errorf("a percept: %v, want ErrInvalidReference", err)
			}
			if _, err := a.k.Governor().OnceKeyOf(a.ctx, "actions:t:99"); !errors.Is(err, kernel.ErrInvalidReference) {
				t.Errorf("no such action: %v, want ErrInvalidReference", err)
			}
			if _, err := a.k.Governor().ClaimedBy(a.ctx, "free"); !errors.Is(err, blackboard.ErrNotFound) {
				t.Errorf("free key: %v, want ErrNotFound", err)
			}
			if _, err := a.k.Governor().ClaimedBy(a.ctx, ""); !errors.Is(err, blackboard.ErrInvalidInput) {
				t.Errorf("empty key: %v, want ErrInvalidInput", err)
			}
		})
	})
}
