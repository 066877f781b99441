package column

import (
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
)

func TestDecode(t *testing.T) {
	good := Text{Slot: "actions", Mode: "commit", Role: "kernel", Status: "ACTIVE", Scope: "episode", Reason: "COMMITTED", Payload: []byte(`{"a":1}`)}
	var r blackboard.Record
	if err := Decode(good, &r); err != nil {
		t.Fatal(err)
	}
	if r.Slot != blackboard.Actions || r.Mode != blackboard.ModeCommit || r.Provenance.Role != blackboard.RoleKernel ||
		r.Status != blackboard.StatusActive || r.Scope != blackboard.ScopeEpisode || r.Reason != reason.Committed || r.Payload["a"] != 1.0 {
		t.Errorf("decoded %+v", r)
	}
	for column, bad := range map[string]Text{
		"slot":    {Slot: "nope", Mode: good.Mode, Role: good.Role, Status: good.Status, Scope: good.Scope, Payload: good.Payload},
		"status":  {Slot: good.Slot, Mode: good.Mode, Role: good.Role, Status: "nope", Scope: good.Scope, Payload: good.Payload},
		"payload": {Slot: good.Slot, Mode: good.Mode, Role: good.Role, Status: good.Status, Scope: good.Scope, Payload: []byte(`{`)},
	} {
		if err := Decode(bad, &blackboard.Record{}); err == nil || !strings.Contains(err.Error(), "corrupt column "+column) {
			t.Errorf("%s: %v", column, err)
		}
	}
}
