package toolgate

import (
	"context"
	"strings"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// How a refusal the kernel never saw is recorded, and what a decision
// record says about the call.

// pending is the Result of a committed action that waits for approval:
// what to approve, with the committed arguments and their digest (args
// is copied), so that an adapter asks its approver without reading the
// pending approvals.
func (x *executor) pending(ctx context.Context, e *entry, actionID string, args blackboard.Payload, digest string) Result {
	return Result{Outcome: audit.OutcomePendingApproval, Code: reason.ApprovalRequired, ActionID: actionID,
		ArgsDigest: digest, Args: args.Clone(), Hint: x.hint(ctx, e, reason.ApprovalRequired, kernel.Cause{}, actionID)}
}

// callContext is what a decision record says about the call itself:
// the gate's policy hash, the tool (escaped when it is not a name), caller, call id, retry key and intent as
// given (cut to a sane length). A refusal before the arguments parse adds
// the raw arguments ([withRawArgs]); once they parse, the parsed arguments
// and their digest take their place. Sized for one group of the map: a
// larger hint costs every call, refusals included, more than the rare
// committed call whose keys outgrow it.
func (x *executor) callContext(c Call, e *entry) blackboard.Payload {
	cc := make(blackboard.Payload, 8)
	cc[keyPolicy] = x.g.policyValue
	// A registered tool's and a configured caller's names are what
	// recordedTool and clip make of them: their boxed copies serve.
	if e != nil {
		cc["tool"] = boxed(e.nameValue, c.Tool)
	} else {
		cc["tool"] = recordedTool(c.Tool)
	}
	if r := x.g.contracts[c.Caller]; r != nil {
		cc["caller"] = boxed(r.value, c.Caller)
	} else {
		cc["caller"] = clip(c.Caller)
	}
	if c.ID != "" {
		cc["call_id"] = clip(c.ID)
	}
	if c.RetryKey != "" {
		cc["retry_key"] = clip(c.RetryKey)
	}
	if c.Intent != "" {
		cc["intent"] = clip(c.Intent)
	}
	return cc
}

// withRawArgs adds the raw arguments of c to its call context cc when they
// are short, for the record of a call refused before they parse, and
// returns cc; longer ones are recorded by their size and digest
// ([footprint]). A tool e that masks fields has none added, and no
// digest: its raw arguments would hold the values unmasked.
func withRawArgs(cc blackboard.Payload, c Call, e *entry) blackboard.Payload {
	if e != nil && len(e.Masked) > 0 && masksStored() {
		if len(c.Args) > maxRawArgs {
			footprint(cc, c.Args, e)
		}
		return cc
	}
	if len(c.Args) <= maxRawArgs {
		cc["args_raw"] = strings.ToValidUTF8(string(c.Args), "\uFFFD")
	} else {
		footprint(cc, c.Args, e)
	}
	return cc
}

// maxRawArgs bounds the unparsed arguments a refusal's record keeps.
const maxRawArgs = 1024

// refuse records a refusal the kernel's pipeline never saw (a caller
// contract, an intent, an unknown tool, bad arguments, an execution-time
// check) and returns it as a Result.
func (x *executor) refuse(ctx context.Context, traceID string, e *entry, tool string, code reason.Code, detail string, cc blackboard.Payload) (Result, error) {
	kind := clip(tool)
	if e != nil {
		kind = e.action()
	}
	if kind == "" {
		kind = "unnamed_tool"
	}
	dr, err := audit.Append(ctx, x.planner.gov, audit.Entry{TraceID: traceID, Kind: kind, Outcome: audit.OutcomeRefused,
		Code: code, Detail: detail, Context: cc})
	if d, smaller, ok := shrunk(err, detail, cc); ok {
		// Over the store's size limit (arguments near it, kept in the
		// context): recorded with their size and digest instead.
		detail = d
		dr, err = audit.Append(ctx, x.planner.gov, audit.Entry{TraceID: traceID, Kind: kind, Outcome: audit.OutcomeRefused,
			Code: code, Detail: detail, Context: smaller})
	}
	if err != nil {
		return Result{}, err
	}
	root := kernel.Cause{Code: code, Detail: detail}
	return Result{Outcome: audit.OutcomeRefused, Code: code, RootCause: root, Hint: x.hint(ctx, e, code, root, ""), DecisionID: dr.ID}, nil
}
