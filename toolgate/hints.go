package toolgate

import (
	"context"
	"strings"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// hint writes the repair hint a model gets with a refusal or a failure:
// a short instruction derived from the code, the root cause's code first
// (NO_COMMITTED_BELIEF because of STALE_EVIDENCE is a stale-evidence
// problem). Every tool gets the gate's hints, from this one table, so
// that a hint says what the gate knows to be true (DUPLICATE_ACTION's
// reads what became of the action holding the key). arg carries what the hint may name (the
// approval id).
func (x *executor) hint(ctx context.Context, e *entry, code reason.Code, root kernel.Cause, arg string) string {
	codes := []reason.Code{code}
	if root.Code != "" && root.Code != code {
		codes = []reason.Code{root.Code, code}
	}
	name := "the tool"
	if e != nil {
		name = e.Name
	}
	for _, c := range codes {
		if h := x.defaultHint(ctx, c, root, name, arg); h != "" {
			return h
		}
	}
	return "The call was refused (" + string(code) + "). Do not retry it unchanged."
}

// defaultHint is the gate's hint for one code, or "" when it has none.
func (x *executor) defaultHint(ctx context.Context, code reason.Code, root kernel.Cause, tool, arg string) string {
	switch code {
	case reason.ToolUnknown:
		return "There is no such tool. Call only the tools you were given."
	case reason.ToolNotPermitted:
		return "This tool is not available to you. Do not call it again; use your own tools or hand the task back."
	case reason.ReadOnlyMode:
		return "This run is read-only: " + tool + " changes something and cannot run. Do not call it; use read-only tools or hand the task back."
	case reason.ToolProhibited:
		return "This tool is prohibited in this run. Do not call it again; use your other tools or hand the task back."
	case reason.ContextInvalid:
		return "The call named a context that is not this run's. The call was not made."
	case reason.ToolNotForIntent:
		return "This tool does not serve the current request. Do not call it for this request."
	case reason.InvalidArguments:
		return "Fix the arguments (" + root.Detail + "), then call " + tool + " again."
	case reason.OutOfScope:
		return "This run acts for one person on what they asked about, and this call is not within it (" + root.Detail + "). Do not act on anything else; answer what was asked, or hand the task back."
	case reason.ArgumentNotBound:
		return "The arguments must follow from what was looked up (" + root.Detail + "). Use the values the observation shows, or do not call " + tool + "."
	case reason.StaleEvidence, reason.SupersededEvidence, reason.TTLExpired:
		kind, refresh := x.refresher(ctx, root.Record)
		if refresh != "" {
			return "The " + kind + " information is out of date. Call " + refresh + " again to refresh it, then retry."
		}
		return "The information this call rests on" + paren(kind) + " is out of date. Refresh it before retrying."
	case reason.MissingEvidence:
		kind, refresh := x.refresher(ctx, root.Record)
		if refresh != "" {
			return "The " + kind + " information has not been looked up. Call " + refresh + " first, then retry."
		}
		return "The information this call needs has not been observed. Look it up first, then retry."
	case reason.UnresolvedConflict:
		return "Sources disagree about the information this call rests on. Do not act on it; ask for a human review."
	case reason.LowConfidence:
		return "The information this call rests on is not reliable enough to act on. Do not retry; ask for a human review."
	case reason.NoCommittedBelief, reason.BeliefNotSatisfied, reason.PlanMissingBelief, reason.PlanBeliefNotSatisfied:
		return "The conditions for " + tool + " are not established" + paren(root.Detail) + ". Establish them first (look up what they rest on), or do not call it."
	case reason.DuplicateAction:
		// What is true of the action holding the key: taken only when it
		// executed, else pending, running or refused.
		if !duplicateHintTrue() {
			return "This action was already taken. Do not retry it."
		}
		return x.holderState(ctx, root.Record)
	case reason.OnceKeyMissing:
		return "The information that identifies this action is missing or out of date. Look it up again, then retry."
	case reason.NoPrediction, reason.NegativePrediction:
		return "This call's outcome is not predicted to be safe. Do not retry; ask for a human review."
	case reason.RuleViolated, reason.RuleError, reason.FieldMismatch:
		return "A policy forbids this call" + paren(root.Rule) + ". Do not retry it with the same arguments."
	case reason.NoFeasiblePlan:
		return "This action needs an approved plan first. Do not call it before there is one."
	case reason.UngroundedAction, reason.UnknownActionType:
		return "This tool cannot be used now. Do not retry it."
	case reason.ApprovalRequired:
		return "This call waits for a person's approval (" + arg + "). Tell the user it is pending; do not call the tool again for it."
	case reason.ApprovalDenied:
		return "A person denied this call. Do not retry it; it has been queued for review."
	case reason.ApprovalExpired:
		return "The approval for this call expired before it ran. Do not retry it; it has been queued for review."
	case reason.ApprovalMismatch:
		return "The arguments differ from the approved ones. Call " + tool + " again with the new arguments to ask for a new approval."
	case reason.ArgumentsChanged:
		return "The arguments differ from the committed call. Call " + tool + " again with the new arguments."
	// An effect's error text (a panic, a stack trace, an internal message)
	// stays in the decision record: the model gets the code and the
	// failure's kind ([Result.ForModel]), never the text.
	case reason.EffectFailed:
		if !errorTextHidden() {
			return "The tool failed" + paren(root.Detail) + ". Do not retry unless the user asks."
		}
		return "The tool failed. Do not retry unless the user asks."
	case reason.RetriesExhausted:
		return "The tool kept failing. Do not retry now; tell the user."
	case reason.RetryKeyConflict:
		return "This call's retry key was used for another call. Make a new call with a new key."
	case reason.CallRunning:
		return "This call is still running; its result is not known yet. Do not call " + tool + " again for it."
	case reason.EffectIncomplete:
		return "The tool answered without all the data it should have returned" + paren(root.Detail) + ". Do not rely on this result; do not retry the same call unchanged."
	case reason.OutputInvalid:
		return "The tool ran but its result could not be recorded. Do not retry; tell the user."
	case reason.MaskedUnavailable:
		return "The call cannot run without its arguments, which are not stored. Resume it with the same arguments, or call " + tool + " again."
	case reason.EffectUnavailable:
		return "The call has not run: the program that runs " + tool + " has not run it yet. Do not call it again for this now."
	case reason.EffectUnknown:
		return "It is not known whether " + tool + " took effect: it was interrupted. Do not call it again for this; tell the user a person will check."
	}
	if strings.HasSuffix(string(code), "_BLOCKED") {
		return "A policy forbids this call" + paren(root.Rule) + ". Do not retry it with the same arguments."
	}
	return ""
}

// refresher names the percept kind of a record and the tool whose result
// it is, if any.
func (x *executor) refresher(ctx context.Context, recordID string) (kind, tool string) {
	if recordID == "" {
		return "", ""
	}
	rec, err := x.reader.Get(ctx, recordID)
	if err != nil || rec.Slot != blackboard.Percepts {
		return "", ""
	}
	for _, e := range x.g.order {
		if e.resultKind() == rec.Kind {
			return rec.Kind, e.Name
		}
	}
	return rec.Kind, ""
}

// paren returns " (s)", or "" for an empty s.
func paren(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}
