package inspect

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/budget"
	"github.com/blackboardkernel/bk/internal/cmdline"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/toolgate"
)

// PendingApproval is a committed action waiting for a person.
type PendingApproval struct {
	ActionID  string             `json:"action_id"`
	TraceID   string             `json:"trace_id"`
	Namespace string             `json:"namespace"`
	Kind      string             `json:"kind"`
	Tool      string             `json:"tool,omitempty"`
	SinceMS   int64              `json:"since_ts_ms"`
	AgeMS     int64              `json:"age_ms"`
	Reason    string             `json:"reason,omitempty"`
	Args      blackboard.Payload `json:"args,omitempty"`
	// Digest is the committed arguments' [toolgate.ArgsDigest], which an
	// approval binds (bk approve --digest).
	Digest string `json:"digest,omitempty"`
	// Budget is the budget the call was checked against when it was
	// decided, as its decision record carries it (the snapshot the gate
	// took: under "budget"); nil when no budget applied.
	Budget *budget.Snapshot `json:"budget,omitempty"`
}

// budgetOf reads the budget snapshot a decision record's context carries
// under "budget"; nil when it carries none or one that does not
// read as a snapshot.
func budgetOf(d audit.Entry) *budget.Snapshot {
	m, ok := d.Context["budget"].(map[string]any)
	if !ok {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	var snap budget.Snapshot
	if json.Unmarshal(b, &snap) != nil || snap.RunID == "" {
		return nil
	}
	return &snap
}

// Approvals lists the actions whose decision record says
// pending_approval and that no decision in force (a denial, or an
// approval that has not expired at now) and no effect has followed yet,
// oldest first, with their age at now: an action whose approval expired
// unused waits for a new decision (the gate's error says which
// decisions the gate refuses). The kind and the arguments
// shown are the committed action's own: a record whose subject is not a
// committed action of its kind in the namespace is passed over, whatever
// its context says.
func Approvals(ctx context.Context, s store.Store, namespace string, now time.Time) ([]PendingApproval, error) {
	var pending []PendingApproval
	decided := map[string]bool{}
	for r, err := range s.ListSlot(ctx, blackboard.Evidence, store.Filter{Namespace: namespace}) {
		if err != nil {
			return nil, err
		}
		if a, ok := audit.ApprovalOf(r); ok {
			// Only an approval that expired leaves room for a new decision;
			// the gate writes none after a denial or a used approval.
			if a.Decision != audit.Approved || !(r.Status == blackboard.StatusExpired || r.ExpiredAt(now.UnixMilli())) {
				decided[a.ActionID] = true
			}
			continue
		}
		d, ok := audit.Of(r)
		if !ok || d.Outcome != audit.OutcomePendingApproval {
			continue
		}
		p := PendingApproval{TraceID: d.TraceID, Namespace: d.Namespace, SinceMS: d.TimeMS, ActionID: d.Subject, Kind: d.Kind, Budget: budgetOf(d)}
		p.Tool, _ = d.Context["tool"].(string)
		p.Reason, _ = d.Context["approval_reason"].(string)
		if args, ok := d.Context["args"].(map[string]any); ok && mutApproverView {
			p.Args = args
		}
		pending = append(pending, p)
	}
	effects, err := effectsByAction(ctx, s, namespace)
	if err != nil {
		return nil, err
	}
	out := []PendingApproval{}
	for _, p := range pending {
		if decided[p.ActionID] || effects[p.ActionID] != nil {
			continue
		}
		if mutApproverView {
			p.AgeMS = max(0, now.UnixMilli()-p.SinceMS)
			out = append(out, p)
			continue
		}
		decided[p.ActionID] = true // listed once, from its first record
		act, err := s.Get(ctx, p.ActionID)
		if errors.Is(err, blackboard.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if act.Slot != blackboard.Actions || act.Mode != blackboard.ModeCommit || act.Namespace != p.Namespace || act.Kind != p.Kind {
			continue
		}
		p.Args = actionArgs(act.Payload)
		if p.Digest, err = toolgate.ArgsDigest(act.Payload); err != nil {
			return nil, err
		}
		p.AgeMS = max(0, now.UnixMilli()-p.SinceMS)
		out = append(out, p)
	}
	return out, nil
}

// actionArgs is what an approver is shown of a committed action: its
// payload without the keys the kernel reads or derives.
func actionArgs(p blackboard.Payload) blackboard.Payload {
	out := p.Clone()
	for _, key := range []string{"requires_beliefs", "require_prediction", "type", "uses_stale_data",
		"uses_conflicted_data", "uses_low_confidence_data", "has_negative_prediction"} {
		delete(out, key)
	}
	return out
}

func runApprovals(ctx context.Context, e *env, _ []string) error {
	rows, err := Approvals(ctx, e.store, e.namespace, e.now)
	if err != nil {
		return err
	}
	return writeList(e, rows, "no approvals pending", "ACTION\tTRACE\tTOOL\tAGE\tREASON\tDIGEST", func(p PendingApproval) []string {
		return []string{clip(p.ActionID, 40), clip(p.TraceID, 24), clip(cmp.Or(p.Tool, p.Kind), 20),
			age(time.Duration(p.AgeMS) * time.Millisecond), clip(p.Reason, 30), p.Digest}
	})
}

// EffectStep is one record the tool-call gate wrote about an action's
// effect: an attempt (Attempt numbers it from 1, LeaseUntilMS is its
// lease), or how the effect ended: its result, a failure, a refusal for
// good or an escalation, with its code.
type EffectStep struct {
	Record       string      `json:"record"`
	TimeMS       int64       `json:"ts_ms"`
	Status       string      `json:"status"`
	Attempt      int         `json:"attempt,omitempty"`
	LeaseUntilMS int64       `json:"lease_until_ms,omitempty"`
	Code         reason.Code `json:"code,omitempty"`
	// Approval is the approval the attempt ran under; on an escalation,
	// the denial or the approval that expired, with its Approver and Note.
	Approval string `json:"approval,omitempty"`
	Approver string `json:"approver,omitempty"`
	Note     string `json:"note,omitempty"`
	// Error is a failure's or a refusal's message; Category and Retryable
	// its typed signal, when the effect's error carried one.
	Error     string `json:"error,omitempty"`
	Category  string `json:"category,omitempty"`
	Retryable bool   `json:"retryable,omitempty"`
	// PreviousError is, on a retry's attempt, the error of the attempt
	// before, which the gate retried without a record of its own.
	PreviousError string `json:"previous_error,omitempty"`
	// Output is a successful result's output: what the tool returned, as
	// stored (masked fields hold their keyed hash).
	Output blackboard.Payload `json:"output,omitempty"`
}

// EffectRow is one governed action's effect: its attempts and outcome.
type EffectRow struct {
	ActionID  string `json:"action_id"`
	TraceID   string `json:"trace_id"`
	Namespace string `json:"namespace"`
	Tool      string `json:"tool"`
	Attempts  int    `json:"attempts"`
	// Outcome is succeeded, failed, escalated, or in_progress while an
	// attempt has no result.
	Outcome string      `json:"outcome"`
	Code    reason.Code `json:"code,omitempty"`
	Result  string      `json:"result,omitempty"` // the record of the result
	LastMS  int64       `json:"last_ts_ms"`
	// Steps are the records of the effect in order, each attempt and the
	// result; only [TraceEffects] fills them.
	Steps []EffectStep `json:"steps,omitempty"`
}

// effectLog gathers effect rows from records, in the order of each
// action's first record; with steps, each row keeps its records.
type effectLog struct {
	order []string
	rows  map[string]*EffectRow
	steps bool
}

// add counts r into the log when it is the gate's effect record
// ([audit.EffectOf]: an object another writer stored under
// [audit.KeyEffect] is no effect).
func (l *effectLog) add(r blackboard.Record) {
	e, ok := audit.EffectOf(r)
	if !ok {
		return
	}
	row := l.rows[e.ActionID]
	if row == nil {
		row = &EffectRow{ActionID: e.ActionID, TraceID: r.Provenance.TraceID, Namespace: r.Namespace, Outcome: "in_progress"}
		l.rows[e.ActionID] = row
		l.order = append(l.order, e.ActionID)
	}
	row.Tool = e.Tool
	row.LastMS = r.Provenance.TimestampMS
	if l.steps {
		st := EffectStep{Record: r.ID, TimeMS: r.Provenance.TimestampMS, Status: e.Status, Attempt: e.Attempt, LeaseUntilMS: e.LeaseUntilMS,
			Code: e.Code, Approval: e.Approval, Approver: e.Approver, Note: e.Note, Error: e.Error, Category: string(e.Category), Retryable: e.Retryable,
			PreviousError: e.PreviousError}
		if e.Status == audit.StatusSucceeded {
			st.Output = r.Payload.Clone()
			delete(st.Output, audit.KeyEffect)
		}
		row.Steps = append(row.Steps, st)
	}
	if e.Status == audit.StatusAttempted {
		row.Attempts++
		return
	}
	row.Outcome, row.Result = e.Status, r.ID
	if e.Code != "" {
		row.Code = e.Code
	}
}

func (l *effectLog) list() []EffectRow {
	out := make([]EffectRow, 0, len(l.order))
	for _, id := range l.order {
		out = append(out, *l.rows[id])
	}
	return out
}

// Effects lists every action the tool-call gate ran an effect for, in the
// order of its first attempt, from the percepts the gate wrote about it
// (read with [audit.EffectOf]: an object another writer stored under
// [audit.KeyEffect] is no effect).
func Effects(ctx context.Context, s store.Store, namespace string) ([]EffectRow, error) {
	l := effectLog{rows: map[string]*EffectRow{}}
	for r, err := range s.ListSlot(ctx, blackboard.Percepts, store.Filter{Namespace: namespace}) {
		if err != nil {
			return nil, err
		}
		l.add(r)
	}
	return l.list(), nil
}

// TraceEffects lists the effects of one trace as [Effects] does, each
// with its steps: every attempt with its number and lease, and the
// result, failure, refusal or escalation with its code. A trace that has
// no records is an error wrapping [blackboard.ErrNotFound]; a trace
// whose gate ran nothing yet has no effects. The trace is traceID of
// namespace, or, with namespace "", of the one namespace that holds it
// (as [Timeline] finds it).
func TraceEffects(ctx context.Context, s store.Store, namespace, traceID string) ([]EffectRow, error) {
	ns, err := traceNamespace(ctx, s, namespace, traceID)
	if err != nil {
		return nil, err
	}
	l := effectLog{rows: map[string]*EffectRow{}, steps: true}
	n := 0
	for r, err := range s.ListTrace(ctx, ns, traceID) {
		if err != nil {
			return nil, err
		}
		n++
		l.add(r)
	}
	if n == 0 {
		return nil, fmt.Errorf("inspect: effects: no trace %q: %w", traceID, blackboard.ErrNotFound)
	}
	return l.list(), nil
}

func effectsByAction(ctx context.Context, s store.Store, namespace string) (map[string]*EffectRow, error) {
	rows, err := Effects(ctx, s, namespace)
	if err != nil {
		return nil, err
	}
	m := make(map[string]*EffectRow, len(rows))
	for i := range rows {
		m[rows[i].ActionID] = &rows[i]
	}
	return m, nil
}

func runEffects(ctx context.Context, e *env, _ []string) error {
	rows, err := Effects(ctx, e.store, e.namespace)
	if err != nil {
		return err
	}
	return writeList(e, rows, "no effects", "ACTION\tTOOL\tATTEMPTS\tOUTCOME\tCODE\tLAST", func(r EffectRow) []string {
		return []string{clip(r.ActionID, 40), clip(r.Tool, 20), strconv.Itoa(r.Attempts), r.Outcome, clip(string(r.Code), 28), stamp(r.LastMS)}
	})
}

// Export writes records of s as JSON lines: one trace's, or (traceID
// empty) every trace's of namespace (every namespace when empty), trace
// by trace in the order the store lists them. A trace that has no records
// is an error wrapping [blackboard.ErrNotFound], so that a mistyped id is
// not taken for an empty export.
func Export(ctx context.Context, s store.Store, namespace, traceID string, w io.Writer) error {
	enc := newLineEncoder(w)
	if traceID != "" {
		ns, err := traceNamespace(ctx, s, namespace, traceID)
		if err != nil {
			return err
		}
		n := 0
		for r, err := range s.ListTrace(ctx, ns, traceID) {
			if err != nil {
				return err
			}
			n++
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		if n == 0 {
			return fmt.Errorf("inspect: export: no trace %q: %w", traceID, blackboard.ErrNotFound)
		}
		return nil
	}
	for ts, err := range store.ListTraces(ctx, s, namespace) {
		if err != nil {
			return err
		}
		for r, err := range s.ListTrace(ctx, ts.Namespace, ts.TraceID) {
			if err != nil {
				return err
			}
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
	}
	return nil
}

func exportFlags(fs *flag.FlagSet, e *env) {
	fs.StringVar(&e.trace, "trace", "", "export only this trace")
	fs.StringVar(&e.bundle, "bundle", "", "write --trace's evidence bundle to this file instead (its chain, its policy trace's, the signed checkpoints covering them), for bk verify --bundle")
	e.check = func() error {
		if e.bundle != "" && e.trace == "" {
			return cmdline.Usagef("--bundle needs --trace: a bundle holds one trace's evidence")
		}
		return nil
	}
}

func runExport(ctx context.Context, e *env, _ []string) error {
	if e.bundle != "" {
		return exportBundle(ctx, e)
	}
	return Export(ctx, e.store, e.namespace, e.trace, e.out)
}
