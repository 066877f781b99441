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
// on the stack.) It returns the decision and, when record is not nil, the
// committed record (zero when refused): the kernel's copy, the gate's to
// keep, so that the gate reads nothing to run what it has just committed.
func (w governed) Submit(ctx context.Context, e kernel.Entry, record func(audit.Entry) audit.Entry) (kernel.Decision, blackboard.Record, error) {
	if record == nil {
		d, err := w.gov.Submit(ctx, w.name, e, nil)
		return d, blackboard.Record{}, err
	}
	var act blackboard.Record
	d, err := w.gov.Submit(ctx, w.name, e, func(d kernel.Decision, committed blackboard.Record) ([]kernel.Follow, error) {
		act = committed // the last call's: the kernel decides again after a race
		r := record(audit.ForDecision(e.TraceID, e.Kind, d, committed))
		f, err := r.Follow()
		return []kernel.Follow{f}, err
	})
	if err != nil {
		return d, blackboard.Record{}, err
	}
	return d, act, nil
}

// Write writes e as a tool named w.name, with its once-keys; record, when
// not nil, builds the decision record that follows it from the record
// written. It returns what was appended and a copy of the record written.
func (w governed) Write(ctx context.Context, e kernel.Entry, record func(blackboard.Record) audit.Entry) (wrote, error) {
	var kept blackboard.Record
	id, appended, err := w.gov.Write(ctx, w.name, e, func(rec blackboard.Record) ([]kernel.Follow, error) {
		kept = rec // the kernel's copy, the gate's to keep
		if record == nil {
			return nil, nil
		}
		f, err := record(rec).Follow()
		return []kernel.Follow{f}, err
	})
	if err != nil {
		return wrote{}, err
	}
	return wrote{ID: id, Appended: appended, rec: kept}, nil
}

// wrote is what a governed write appended: the ids, and a copy of the
// record written, the caller's to keep (a result's payload becomes a
// Result's output).
type wrote struct {
	ID       string   // the record written
	Appended []string // its follow records, in order
	rec      blackboard.Record
}

// decisionID is the id of the decision record that follows a governed
// write's record ([audit.ForRecord]).
func decisionID(w wrote) string {
	if len(w.Appended) == 0 {
		return ""
	}
	return "decision:" + w.ID
}
