package kernel

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
)

// TestConstraintCanonicalAgreesWithNormalize checks that a constraint's
// payload is stored uncopied exactly when normalisation would leave it as
// it is: every field valid UTF-8 and the whole within the size limit,
// counted as normalisation counts it (escaped characters included).
func TestConstraintCanonicalAgreesWithNormalize(t *testing.T) {
	names := []string{"", "a", "no_duplicate_refund", "<&>\"", "\xff", "é\u2028", strings.Repeat("x", 40)}
	var n int
	for _, name := range names {
		for _, field := range names {
			for _, bind := range []string{"", "refund_seen", "\xfe"} {
				for _, applies := range [][]string{nil, {"refund"}, {"a", "<b>", "c"}, {"ok", "\xff"}} {
					for _, enabled := range []bool{false, true} {
						c := Constraint{Name: name, Enabled: enabled, BlocksField: field, BindPercept: bind, AppliesTo: applies}
						p := c.payload(true)
						for _, limit := range []int{0, 40, 64, 80, 100, 128, 200} {
							norm, err := normalizePayload(p, limit)
							want := err == nil && reflect.DeepEqual(norm, p)
							if got := c.canonical(limit); got != want {
								t.Errorf("%+v, limit %d: canonical %v, normalisation %v (%v)", c, limit, got, want, err)
							}
							n++
						}
					}
				}
			}
		}
	}
	if n < 1000 {
		t.Fatalf("only %d cases", n)
	}
}

// TestConstraintEntryStoresWhatPayloadWould checks that a constraint
// committed through its own canonical payload is stored as the same
// constraint written with [Constraint.Payload] through normalisation.
func TestConstraintEntryStoresWhatPayloadWould(t *testing.T) {
	ctx := context.Background()
	k, err := New(Config{})
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
		gotID, err := sym.CommitConstraint(ctx, "t-"+c.Name, c, "")
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
