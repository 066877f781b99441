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
// first column that does not decode. The enums are strings, so any text
// would convert: each is checked here, so that a corrupt row fails closed
// instead of surfacing as a record no writer could have written.
func Decode(c Text, r *blackboard.Record) error {
	r.Slot = blackboard.Slot(c.Slot)
	r.Mode = blackboard.Mode(c.Mode)
	r.Provenance.Role = blackboard.Role(c.Role)
	r.Status = blackboard.Status(c.Status)
	r.Scope = blackboard.Scope(c.Scope)
	for _, f := range []struct {
		name, value string
		ok          bool
	}{
		{"slot", c.Slot, r.Slot.Valid()},
		{"mode", c.Mode, r.Mode.Valid()},
		{"role", c.Role, r.Provenance.Role.Valid()},
		{"status", c.Status, knownStatus(r.Status)},
		{"scope", c.Scope, r.Scope.Valid()},
	} {
		if !f.ok {
			return fmt.Errorf("corrupt column %s: %v: unknown %s %q", f.name, blackboard.ErrInvalidInput, f.name, f.value)
		}
	}
	if err := json.Unmarshal(c.Payload, &r.Payload); err != nil {
		return fmt.Errorf("corrupt column payload: %v", err)
	}
	r.Reason = reason.Code(c.Reason)
	return nil
}

// knownStatus reports whether st is one of the three statuses a record may
// have (Status has no exported Valid: no integrator builds one from text).
func knownStatus(st blackboard.Status) bool {
	return st == blackboard.StatusActive || st == blackboard.StatusInvalidated || st == blackboard.StatusExpired
}
