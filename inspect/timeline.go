package inspect

import (
	"context"
	"encoding/json"
	"io"

	"github.com/blackboardkernel/bk/internal/inspect"
	"github.com/blackboardkernel/bk/store"
)

// TimelineReport is the events of one trace in order, each at its step of
// the kernel's loop (t0 a tool commits a percept, t2 a proposal, t3
// evidence validation, ... t9 action gating), with what happened to the
// trace's actions. Print it (its String is the text `bk timeline` prints)
// or write it with [TimelineReport.WriteSteps]; encode it with encoding/json (its shape:
// "trace_id", "namespace", "records", "decisions", "refusals", "outcome",
// "actions" by type and fate, and "events").
type TimelineReport struct {
	x inspect.TimelineReport
}

// Timeline reads trace traceID of namespace from s (every namespace when
// namespace is "") and puts its records in order as events. A trace s
// holds no record of is [blackboard.ErrNotFound]; a failed read of s is
// returned as it is.
func Timeline(ctx context.Context, s store.Store, namespace, traceID string) (*TimelineReport, error) {
	x, err := inspect.Timeline(ctx, s, namespace, traceID)
	if err != nil {
		return nil, err
	}
	return &TimelineReport{x: x}, nil
}

// Fates says what became of the trace's actions, by type, in the order
// the types first appear ("lookup_order executed; issue_refund refused,
// denied; send_email executed"), or "no action": its "outcome" in JSON.
func (t *TimelineReport) Fates() string { return t.x.Outcome }

// Refused returns the records the trace's refusals are about, in order:
// each proposal the kernel refused (a belief, a plan, an action), and a
// decision record that holds a refusal nothing else shows (a contract's,
// a binding's). Give one to [Explain] to see why.
func (t *TimelineReport) Refused() []string {
	var ids []string
	for _, e := range t.x.Events {
		if e.Type == inspect.EventRefusal && e.Record != "" {
			ids = append(ids, e.Record)
		}
	}
	return ids
}

// WriteSteps writes the timeline led by each event's step, as `bk
// timeline --steps` prints it ("t3 evidence validation: ...").
func (t *TimelineReport) WriteSteps(w io.Writer) error { return t.x.WriteSteps(w) }

// String is the timeline as `bk timeline` prints it, one event a line,
// every stored text made inert.
func (t *TimelineReport) String() string { return t.x.String() }

// MarshalJSON encodes the timeline as `bk timeline --json` prints it.
func (t *TimelineReport) MarshalJSON() ([]byte, error) { return marshal(t.x) }

// marshal encodes a report as JSON whose every character prints inert: the
// controls encoding/json leaves raw are \uXXXX escapes, the same value.
func marshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return inspect.InertJSON(b), nil
}
