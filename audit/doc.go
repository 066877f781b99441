// Package audit is the record layer of governed calls: decision records
// (the audit log of every executed, refused or escalated call), approval
// records ([Approval]: an approver's typed answer, and [Pending]: an
// action waiting for one), the tool-call gate's effect records ([Effect],
// under [KeyEffect] in the percepts the gate writes) and its policy
// snapshots ([Policy], in the namespace's [PolicyTrace]), each with one
// encoder and one decoder ([Effect.Encode] and [EffectOf] for an effect,
// [Policy.Follow] and [PolicyOf] for a snapshot). The kinds of the
// records the gate writes ([KindAttempt], [KindRequest], [KindPolicy],
// ...) and the writer ids it writes them under ([CallerWriter],
// [DeriverWriter], [GateWriter]) are defined here too, for every reader.
//
// The kernel decides and appends; it does not know these shapes. The tool
// gate and the orchestrator build a [Entry] from what the kernel decided
// ([ForDecision], [ForRecord]) and hand it to the kernel as a follow entry
// ([Entry.Follow]) of the submit or write it records, so that the
// decision record lands in the same atomic batch as the state change it
// records; a call refused before it reached the kernel is recorded on its
// own ([Append]). Every reader — the gate's recovery and approval screens,
// the budget's gate pressure, the inspector — decodes through [Of] and
// [ApprovalOf], which accept only what the kernel's Governor wrote: a
// decision record with the kernel's role, an approval with the approver's.
// A record of the same kind written by any handle is not one.
//
// [About] reads the decision record written with a record, by id, at the
// same cost at any length of the trace; [List] streams the decision
// records of a trace or of the namespace that match a [Query] (trace,
// kind, tool, outcome), for recovery and for people. [PolicyOf] checks a
// snapshot against the hash its record names ([ErrPolicyTampered]), so
// that what a replay or an inspector reads is what was in force.
//
// The functions are safe for concurrent use.
package audit
