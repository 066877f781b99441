package inspect

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"text/tabwriter"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// SlotCount counts the records of one slot by status.
type SlotCount struct {
	Slot        blackboard.Slot `json:"slot"`
	Total       int             `json:"total"`
	Active      int             `json:"active"`
	Invalidated int             `json:"invalidated"`
	Expired     int             `json:"expired"`
}

// CodeCount is how many decisions had a code.
type CodeCount struct {
	Code  reason.Code `json:"code"`
	Count int         `json:"count"`
}

// LearnedConstraint is an active persistent constraint: what the agent
// learned, and where.
type LearnedConstraint struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Writer    string `json:"writer"`
	TraceID   string `json:"trace_id"`
	Blocks    string `json:"blocks_field,omitempty"`
}

// StatsReport is `bk stats`.
type StatsReport struct {
	Namespace   string              `json:"namespace,omitempty"`
	Records     []SlotCount         `json:"records"`
	Decisions   []CodeCount         `json:"decisions"`
	Constraints []LearnedConstraint `json:"learned_constraints"`
	// Metrics are the spec's evaluation metrics over the same records.
	Metrics Metrics `json:"metrics"`
}

// Stats counts the records of s (of namespace, when not empty) per slot
// and status, the kernel's decisions by code (commits, refusals, and calls
// refused before the kernel, from their decision records) and lists the
// learned (active, persistent) constraints, and computes the evaluation
// [Metrics] from the same records. It reads every slot once, in one pass:
// its cost is linear in the records, whatever the traces' lengths. It
// returns the store's error, if listing a slot fails.
func Stats(ctx context.Context, s store.Store, namespace string) (StatsReport, error) {
	rep := StatsReport{Namespace: namespace, Decisions: []CodeCount{}, Constraints: []LearnedConstraint{}}
	codes := map[reason.Code]int{}
	met := newMetrics()
	for _, slot := range blackboard.AllSlots() {
		c := SlotCount{Slot: slot}
		for r, err := range s.ListSlot(ctx, slot, store.Filter{Namespace: namespace}) {
			if err != nil {
				return StatsReport{}, err
			}
			c.Total++
			met.add(&r)
			switch r.Status {
			case blackboard.StatusActive:
				c.Active++
			case blackboard.StatusInvalidated:
				c.Invalidated++
			case blackboard.StatusExpired:
				c.Expired++
			}
			switch {
			case r.Mode == blackboard.ModePropose && r.Status == blackboard.StatusInvalidated && r.Reason != reason.SupersededByCommit:
				codes[r.Reason]++
			case r.Mode == blackboard.ModeCommit && r.Provenance.Role == blackboard.RoleKernel && slot != blackboard.Evidence:
				codes[r.Reason]++
			case slot == blackboard.Evidence && r.Kind == audit.Kind && r.Provenance.Role == blackboard.RoleKernel:
				// A call refused before the kernel's pipeline has only this.
				if subject, _ := r.Payload["subject"].(string); subject == "" {
					if code, ok := r.Payload["code"].(string); ok {
						codes[reason.Code(code)]++
					}
				}
			case slot == blackboard.Constraints && r.Scope == blackboard.ScopePersistent && r.Status == blackboard.StatusActive:
				name, _ := r.Payload["name"].(string)
				blocks, _ := r.Payload["blocks_field"].(string)
				rep.Constraints = append(rep.Constraints, LearnedConstraint{ID: r.ID, Name: name, Namespace: r.Namespace,
					Writer: r.Provenance.Writer, TraceID: r.Provenance.TraceID, Blocks: blocks})
			}
		}
		rep.Records = append(rep.Records, c)
	}
	for code, n := range codes {
		rep.Decisions = append(rep.Decisions, CodeCount{Code: code, Count: n})
	}
	slices.SortFunc(rep.Decisions, func(a, b CodeCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Code, b.Code))
	})
	rep.Metrics = met.finish()
	return rep, nil
}

func runStats(ctx context.Context, e *env, _ []string) error {
	rep, err := Stats(ctx, e.store, e.namespace)
	if err != nil {
		return err
	}
	if e.json {
		return writeJSON(e.out, rep)
	}
	tw := tabwriter.NewWriter(e.out, 0, 0, 2, ' ', 0)
	writeMetrics(tw, rep.Metrics)
	fmt.Fprintln(tw, "\nDECISIONS BY CODE\tCOUNT")
	for _, c := range rep.Decisions {
		fmt.Fprintf(tw, "%s\t%d\n", Inert(string(c.Code)), c.Count)
	}
	fmt.Fprintln(tw, "\nRECORDS PER SLOT\tTOTAL\tACTIVE\tINVALIDATED\tEXPIRED")
	for _, c := range rep.Records {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\n", Inert(string(c.Slot)), c.Total, c.Active, c.Invalidated, c.Expired)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(e.out, "\nLEARNED CONSTRAINTS: %d\n", len(rep.Constraints))
	tw = tabwriter.NewWriter(e.out, 0, 0, 2, ' ', 0)
	for _, c := range rep.Constraints {
		fmt.Fprintf(tw, "  %s\t%s\t%s\tby %s\n", Inert(clip(c.Name, 32)), Inert(clip(c.Namespace, 16)),
			Inert(clip(c.ID, 56)), Inert(clip(c.Writer, 20)))
	}
	return tw.Flush()
}
