package column

import (
	"encoding/json"
	"fmt"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
)

// Text is a record's columns as a SQL store keeps them: the enums by name
// and the payload as JSON.
type Text struct {
	Slot, Mode, Role, Status, Scope, Reason string
	Payload                                 []byte
}

// Decode sets r's enums, reason and payload from c. An error names the
// first column that does not decode.
func Decode(c Text, r *blackboard.Record) error {
	for _, f := range []struct {
		name string
		err  error
	}{
		{"slot", r.Slot.UnmarshalText([]byte(c.Slot))},
		{"mode", r.Mode.UnmarshalText([]byte(c.Mode))},
		{"role", r.Provenance.Role.UnmarshalText([]byte(c.Role))},
		{"status", r.Status.UnmarshalText([]byte(c.Status))},
		{"scope", r.Scope.UnmarshalText([]byte(c.Scope))},
		{"payload", json.Unmarshal(c.Payload, &r.Payload)},
	} {
		if f.err != nil {
			return fmt.Errorf("corrupt column %s: %v", f.name, f.err)
		}
	}
	r.Reason = reason.Code(c.Reason)
	return nil
}
