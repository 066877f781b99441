package inspect

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/cmdline"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/toolgate"
)

// DefaultApprovalTTL is how long a decision bk approve or bk deny writes
// stays valid when --ttl is not given.
const DefaultApprovalTTL = time.Hour

// ErrNotPending is returned by bk approve and bk deny for an action that
// is not waiting for approval: no committed action of the tool-call gate
// whose decision record says pending_approval, or one already decided
// (a denial, an approval in force or used), started or done. An action
// whose approval expired unused waits again. When another decision on the
// action (another bk approve, a console) was written first, the error also
// wraps the gate's [toolgate.ErrDecided] (the error names
// that decision). Nothing is written.
var ErrNotPending = errors.New("inspect: not an action waiting for approval")

// decision is what bk approve and bk deny are given.
type decision struct {
	as, digest, note string
	ttl              time.Duration
}

func decisionFlags(fs *flag.FlagSet, e *env) {
	fs.StringVar(&e.decide.as, "as", "", "the approver's name, recorded as given: the terminal is trusted as whoever runs it (required)")
	fs.StringVar(&e.decide.digest, "digest", "", "the digest of the arguments decided on, as bk approvals shows it (required)")
	fs.StringVar(&e.decide.note, "note", "", "a note kept with the decision")
	fs.DurationVar(&e.decide.ttl, "ttl", DefaultApprovalTTL, fmt.Sprintf("how long the decision stays valid (at most %v)", audit.MaxApprovalTTL))
	e.check = func() error {
		switch d := e.decide; {
		case d.as == "":
			return cmdline.Usagef("--as NAME is required")
		case d.digest == "":
			return cmdline.Usagef("--digest D is required")
		case d.ttl <= 0 || d.ttl > audit.MaxApprovalTTL:
			return cmdline.Usagef("--ttl %v outside (0, %v]", d.ttl, audit.MaxApprovalTTL)
		}
		return nil
	}
}

// Decided is what bk approve and bk deny print: the approval record
// written.
type Decided struct {
	Record    string `json:"record"`
	ActionID  string `json:"action_id"`
	TraceID   string `json:"trace_id"`
	Namespace string `json:"namespace"`
	Decision  string `json:"decision"` // approved or denied
	Approver  string `json:"approver"`
	Note      string `json:"note,omitempty"`
	ExpiresMS int64  `json:"expires_ts_ms"`
}

func runApprove(ctx context.Context, e *env, args []string) error {
	return runDecision(ctx, e, args[0], audit.Approved)
}

func runDeny(ctx context.Context, e *env, args []string) error {
	return runDecision(ctx, e, args[0], audit.Denied)
}

// runDecision writes an approver's decision about actionID through the
// tool-call gate's [toolgate.Approver], which needs no tool: it binds the
// committed action, the digest of its arguments, the approver and an
// expiry, refuses a digest that does not match and an approver that
// proposed the action (by its writer or as the gate caller NAME), and
// takes one decision at a time ([toolgate.ErrDecided]). bk adds the check
// the gate's owner makes when it lists what to decide: the action must
// wait for approval now (listed by [Approvals]).
func runDecision(ctx context.Context, e *env, actionID string, verdict audit.Verdict) error {
	d := e.decide
	act, err := e.store.Get(ctx, actionID)
	if errors.Is(err, blackboard.ErrNotFound) {
		return fmt.Errorf("%w: no record %q", ErrNotPending, actionID)
	}
	if err != nil {
		return err
	}
	if !mutApprovePending {
		pending, err := Approvals(ctx, e.store, e.namespace, e.now)
		if err != nil {
			return err
		}
		waiting := false
		for _, p := range pending {
			waiting = waiting || p.ActionID == actionID
		}
		if !waiting {
			return fmt.Errorf("%w: %s (bk approvals lists those that are; one already decided, started or done is not)", ErrNotPending, actionID)
		}
	}
	ws, closeStore, err := e.openWritable(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	// A gate without tools is enough to decide: the approver reads the
	// committed action and its proposal, and appends the approval with the
	// approver's role in the action's namespace.
	g, err := toolgate.New(ctx, toolgate.Config{Kernel: kernel.Config{Store: ws, Namespace: act.Namespace}})
	if err != nil {
		return err
	}
	defer g.Close()
	rec, err := g.Approver(d.as).Decide(ctx, audit.Approval{TraceID: act.Provenance.TraceID, ActionID: actionID, Digest: d.digest,
		Decision: verdict, Note: d.note, TTL: d.ttl})
	if errors.Is(err, toolgate.ErrDecided) {
		// Decided meanwhile by someone else: the gate's claim refused this
		// one, and the person is told which decision stands.
		return fmt.Errorf("%w: %w", ErrNotPending, err)
	}
	if err != nil {
		return err
	}
	out := Decided{Record: rec.ID, ActionID: actionID, TraceID: act.Provenance.TraceID, Namespace: rec.Namespace, Decision: string(verdict),
		Approver: d.as, Note: d.note, ExpiresMS: rec.Provenance.TimestampMS + rec.Provenance.TTLMS}
	if e.json {
		return writeJSON(e.out, out)
	}
	// Only an approval is valid until a time: a denial stands.
	until := ""
	if verdict == audit.Approved {
		until = ", valid until " + stamp(out.ExpiresMS) + " UTC"
	}
	_, err = fmt.Fprintln(e.out, Inert(fmt.Sprintf("%s %s (trace %s) as %s%s: record %s",
		verdict, actionID, out.TraceID, d.as, until, rec.ID)))
	return err
}
