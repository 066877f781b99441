package toolgate

import (
	"context"
	"strings"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
)

// hint writes the repair hint a model gets with a refusal or a failure:
// a short instruction derived from the code, the root cause's code first
// (NO_COMMITTED_BELIEF because of STALE_EVIDENCE is a stale-evidence
// problem). A tool's own Hints win. arg carries what the hint may name (the
// approval id).
func (x *executor) hint(ctx context.Context, e *entry, code blackboard.Code, root kernel.Cause, arg string) string {
	codes := []blackboard.Code{code}
	if root.Code != "" && root.Code != code {
		codes = []blackboard.Code{root.Code, code}
	}
	if e != nil {
		for _, c := range codes {
			if h, ok := e.Hints[c]; ok {
				return h
			}
		}
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
func (x *executor) defaultHint(ctx context.Context, code blackboard.Code, root kernel.Cause, tool, arg string) string {
	switch code {
	case CodeToolUnknown:
		return "There is no such tool. Call only the tools you were given."
	case CodeToolNotPermitted:
		return "This tool is not available to you. Do not call it again; use your own tools or hand the task back."
	case CodeReadOnlyMode:
		return "This run is read-only: " + tool + " changes something and cannot run. Do not call it; use read-only tools or hand the task back."
	case CodeToolProhibited:
		return "This tool is prohibited in this run. Do not call it again; use your other tools or hand the task back."
	case CodeContextInvalid:
		return "The call named a context that is not this run's. The call was not made."
	case CodeToolNotForIntent:
		return "This tool does not serve the current request. Do not call it for this request."
	case CodeInvalidArguments:
		return "Fix the arguments (" + root.Detail + "), then call " + tool + " again."
	case CodeOutOfScope:
		return "This run acts for one person on what they asked about, and this call is not within it (" + root.Detail + "). Do not act on anything else; answer what was asked, or hand the task back."
	case CodeArgumentNotBound:
		return "The arguments must follow from what was looked up (" + root.Detail + "). Use the values the observation shows, or do not call " + tool + "."
	case blackboard.CodeStaleEvidence, blackboard.CodeSupersededEvidence, blackboard.CodeTTLExpired:
		kind, refresh := x.refresher(ctx, root.Record)
		if refresh != "" {
			return "The " + kind + " information is out of date. Call " + refresh + " again to refresh it, then retry."
		}
		return "The information this call rests on" + paren(kind) + " is out of date. Refresh it before retrying."
	case blackboard.CodeMissingEvidence:
		kind, refresh := x.refresher(ctx, root.Record)
		if refresh != "" {
			return "The " + kind + " information has not been looked up. Call " + refresh + " first, then retry."
		}
		return "The information this call needs has not been observed. Look it up first, then retry."
	case blackboard.CodeUnresolvedConflict:
		return "Sources disagree about the information this call rests on. Do not act on it; ask for a human review."
	case blackboard.CodeLowConfidence:
		return "The information this call rests on is not reliable enough to act on. Do not retry; ask for a human review."
	case blackboard.CodeNoCommittedBelief, blackboard.CodeBeliefNotSatisfied, blackboard.CodePlanMissingBelief, blackboard.CodePlanBeliefNotSatisfied:
		return "The conditions for " + tool + " are not established" + paren(root.Detail) + ". Establish them first (look up what they rest on), or do not call it."
	case blackboard.CodeDuplicateAction:
		// What is true of the action holding the key: taken only when it
		// executed, else pending, running or refused.
		if !duplicateHintTrue() {
			return "This action was already taken. Do not retry it."
		}
		return x.holderState(ctx, root.Record)
	case blackboard.CodeOnceKeyMissing:
		return "The information that identifies this action is missing or out of date. Look it up again, then retry."
	case blackboard.CodeNoPrediction, blackboard.CodeNegativePrediction:
		return "This call's outcome is not predicted to be safe. Do not retry; ask for a human review."
	case blackboard.CodeRuleViolated, blackboard.CodeRuleError, blackboard.CodeFieldMismatch:
		return "A policy forbids this call" + paren(root.Rule) + ". Do not retry it with the same arguments."
	case blackboard.CodeNoFeasiblePlan:
		return "This action needs an approved plan first. Do not call it before there is one."
	case blackboard.CodeUngroundedAction, blackboard.CodeUnknownActionType:
		return "This tool cannot be used now. Do not retry it."
	case CodeApprovalRequired:
		return "This call waits for a person's approval (" + arg + "). Tell the user it is pending; do not call the tool again for it."
	case CodeApprovalDenied:
		return "A person denied this call. Do not retry it; it has been queued for review."
	case CodeApprovalExpired:
		return "The approval for this call expired before it ran. Do not retry it; it has been queued for review."
	case CodeApprovalMismatch:
		return "The arguments differ from the approved ones. Call " + tool + " again with the new arguments to ask for a new approval."
	case CodeArgumentsChanged:
		return "The arguments differ from the committed call. Call " + tool + " again with the new arguments."
	// An effect's error text (a panic, a stack trace, an internal message)
	// stays in the decision record: the model gets the code and the
	// failure's kind ([Result.ForModel]), never the text.
	case CodeEffectFailed:
		if !errorTextHidden() {
			return "The tool failed" + paren(root.Detail) + ". Do not retry unless the user asks."
		}
		return "The tool failed. Do not retry unless the user asks."
	case CodeRetriesExhausted:
		return "The tool kept failing. Do not retry now; tell the user."
	case CodeRetryKeyConflict:
		return "This call's retry key was used for another call. Make a new call with a new key."
	case CodeCallRunning:
		return "This call is still running; its result is not known yet. Do not call " + tool + " again for it."
	case CodeEffectIncomplete:
		return "The tool answered without all the data it should have returned" + paren(root.Detail) + ". Do not rely on this result; do not retry the same call unchanged."
	case CodeOutputInvalid:
		return "The tool ran but its result could not be recorded. Do not retry; tell the user."
	case CodeMaskedUnavailable:
		return "The call cannot run without its arguments, which are not stored. Resume it with the same arguments, or call " + tool + " again."
	case CodeEffectUnavailable:
		return "The call has not run: the program that runs " + tool + " has not run it yet. Do not call it again for this now."
	case CodeEffectUnknown:
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
