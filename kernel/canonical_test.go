package kernel

import (
	"context"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
)

// TestCanonicalPayloadAgreesWithNormalize checks that a payload the kernel
// stores without a copy is one normalisation would leave as it is, and that
// every other payload (another form, invalid, too large) goes through
// normalisation.
func TestCanonicalPayloadAgreesWithNormalize(t *testing.T) {
	cases := []struct {
		p         blackboard.Payload
		canonical bool
	}{
		{blackboard.Payload{}, true},
		{blackboard.Payload{"a": "x", "b": true, "c": 1.5, "d": nil, "e": []any{"y", 2.0, []any{}}, "f": map[string]any{"g": false}}, true},
		{blackboard.Payload{"a": 1}, false},
		{blackboard.Payload{"a": []string{"x"}}, false},
		{blackboard.Payload{"a": map[string]string{"x": "y"}}, false},
		{blackboard.Payload{"a": json.Number("1")}, false},
		{blackboard.Payload{"a": math.NaN()}, false},
		{blackboard.Payload{"a": "\xff"}, false},
		{blackboard.Payload{"\xff": "a"}, false},
		{blackboard.Payload{"a": strings.Repeat("x", 300)}, false}, // over the limit below
		{nil, false},
	}
	for i, c := range cases {
		got := canonicalPayload(c.p, 256)
		if got != c.canonical {
			t.Errorf("case %d: canonical %v, want %v", i, got, c.canonical)
			continue
		}
		if got {
			n, err := normalizePayload(c.p, 256)
			if err != nil || !reflect.DeepEqual(n, c.p) {
				t.Errorf("case %d: normalisation gives %v, %v; want the payload itself", i, n, err)
			}
		}
	}
}

// TestConstraintEntryStoresWhatPayloadWould checks that a constraint
// committed through its own canonical payload is stored as the same
// constraint written with [Constraint.Payload] through normalisation.
func TestConstraintEntryStoresWhatPayloadWould(t *testing.T) {
	ctx := context.Background()
	k, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	sym := k.Symbolic("sym")
	for _, c := range []Constraint{
		{Name: "no_dup", Enabled: true, BlocksField: "is_duplicate"},
		{Name: "bound", Enabled: false, BlocksField: "is_duplicate", BindPercept: "seen", AppliesTo: []string{"refund", "void"}},
		{Name: "extra", Enabled: true, BlocksField: "f", Extra: blackboard.Payload{"note": 3}},
	} {
		gotID, err := sym.CommitConstraint(ctx, "t-"+c.Name, c, 0)
		if err != nil {
			t.Fatal(err)
		}
		wantID, err := sym.Write(ctx, Entry{TraceID: "u-" + c.Name, Slot: blackboard.Constraints, Kind: c.Name, Payload: c.Payload()})
		if err != nil {
			t.Fatal(err)
		}
		got, want := getRecord(t, sym, gotID), getRecord(t, sym, wantID)
		if !reflect.DeepEqual(got.Payload, want.Payload) {
			t.Errorf("%s: committed %v, written %v", c.Name, got.Payload, want.Payload)
		}
	}
}
