package inspect

import (
	"context"

	"github.com/blackboardkernel/bk/internal/inspect"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// Explanation is the provenance of one record, as [Explain] read it from
// a store: a tree from the record down to the percepts it rests on, with
// the verdict, the reason code and, for a refusal or a fallback, the root
// cause. Print it (its String is the text `bk explain` prints); encode it with
// encoding/json (its shape: "record", "trace_id", "verdict", "code",
// "root_cause", "causes", "tree" of nodes, and "shown", the compiled
// context the model was shown when it made the call decided).
type Explanation struct {
	x inspect.Explanation
}

// Explain reads the record recordID and its trace from s and explains it:
// a committed action, plan, belief or prediction through what it rests
// on; a refused proposal through its root cause (from its decision record
// when it has one, else read back from the trace: the rejected belief
// behind a missing one, the flagged percept behind an evidence code); a
// fallback through the refusal it stands in for; a decision record
// through the record it decided; an action a person denied through the
// denial. It works on a record of any namespace. A record s does not hold
// is [blackboard.ErrNotFound]; a failed read of s is returned as it is.
func Explain(ctx context.Context, s store.Store, recordID string) (*Explanation, error) {
	x, err := inspect.Explain(ctx, s, recordID)
	if err != nil {
		return nil, err
	}
	return &Explanation{x: x}, nil
}

// Verdict is what became of the record: "committed", "refused",
// "fallback" (an action of a safe fallback type, taken instead of a
// refused, denied or failed one), "denied" (a person denied the committed
// action), "expired", "retired" (a committed action taken back unrun),
// "pending" or "observed" (a percept, or another record no decision
// made).
func (e *Explanation) Verdict() string { return e.x.Verdict }

// Code is the record's reason code (empty for a percept).
func (e *Explanation) Code() reason.Code { return e.x.Code }

// RootCause is, for a refusal, a denial or a fallback, the deepest cause
// and the record it is about (the stale percept behind a missing belief);
// false when the record has none.
func (e *Explanation) RootCause() (kernel.Cause, bool) {
	if e.x.RootCause == nil {
		return kernel.Cause{}, false
	}
	return *e.x.RootCause, true
}

// String is the explanation as `bk explain` prints it: the verdict, the
// tree one record a line, the root cause, and what the model was shown,
// every stored text made inert.
func (e *Explanation) String() string { return e.x.String() }

// MarshalJSON encodes the explanation as `bk explain --json` prints it.
func (e *Explanation) MarshalJSON() ([]byte, error) { return marshal(e.x) }
