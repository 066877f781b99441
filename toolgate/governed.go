package toolgate

import (
	"context"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
)

// governed writes as one writer through the kernel's [kernel.Governor]:
// the gate's proposals and results carry their decision records (follow
// records of the same batch), and its attempts and results claim the
// once-keys the gate derives. The gate never hands it out, so no tool's
// effect, planner or model can do either.
type governed struct {
	gov  *kernel.Governor
	name string
}

func governedAs(k *kernel.Kernel, name string) governed { return governed{k.Governor(), name} }

// Submit submits e as a planner named w.name; record, when not nil,
// completes the decision record that follows the decision (its outcome
// and context) and returns it. (A value, not a pointer: the record stays
// on the stack.)
func (w governed) Submit(ctx context.Context, e kernel.Entry, record func(audit.Record) audit.Record) (kernel.Decision, error) {
	if record == nil {
		return w.gov.Submit(ctx, w.name, e, nil)
	}
	return w.gov.Submit(ctx, w.name, e, func(d kernel.Decision) ([]kernel.Follow, error) {
		r := record(audit.ForDecision(e.TraceID, e.Kind, d))
		f, err := r.Follow()
		return []kernel.Follow{f}, err
	})
}

// Write writes e as a tool named w.name, with its once-keys; record, when
// not nil, builds the decision record that follows it from the record
// written.
func (w governed) Write(ctx context.Context, e kernel.Entry, record func(blackboard.Record) audit.Record) (kernel.Written, error) {
	if record == nil {
		return w.gov.Write(ctx, w.name, e, nil)
	}
	return w.gov.Write(ctx, w.name, e, func(rec blackboard.Record) ([]kernel.Follow, error) {
		f, err := record(rec).Follow()
		return []kernel.Follow{f}, err
	})
}

// decisionID is the id of the decision record that follows a governed
// write's record ([audit.ForRecord]).
func decisionID(w kernel.Written) string {
	if len(w.Appended) == 0 {
		return ""
	}
	return "decision:" + w.Record.ID
}
