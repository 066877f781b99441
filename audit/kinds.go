package audit

// The kinds of the records the tool-call gate (package toolgate) writes
// besides decision records ([Kind]) and approvals ([KindApproval]). They
// are stable strings, stored as they are.
const (
	// KindAttempt is the percept the gate writes before it starts an
	// effect (persist before act), its [Effect] of status attempted.
	KindAttempt = "effect_attempt"
	// KindFailed is the percept of an effect that failed for good, or of
	// a committed action refused for good when it was to run (status
	// refused: its caller lost the tool, say). A failure is no
	// observation of what the tool looks at, so it is not recorded under
	// the tool's result kind and never replaces the last good result.
	KindFailed = "effect_failed"
	// KindEscalated is the percept of an action that will not run
	// because its approval was denied or expired; the safe fallback
	// follows it.
	KindEscalated = "effect_escalated"
	// KindRequest is the evidence record of what a trace serves
	// (toolgate's Gate.RecordRequest): payload {"principal": the
	// principal, "resources": {type: [ids]}, "policy": the gate's policy
	// hash}, written with the kernel's role, at most one per trace.
	KindRequest = "request"
	// KindControls is the evidence record of a trace's run controls as
	// they stand after toolgate's Gate.Restrict.
	KindControls = "run_controls"
	// KindCompiledContext is the evidence record of a compiled context:
	// what a model was shown for one turn (package pack writes it; a
	// toolgate Call.Context names one).
	KindCompiledContext = "compiled_context"
	// KindPolicy is the evidence record of a policy snapshot ([Policy]),
	// in its namespace's [PolicyTrace].
	KindPolicy = "policy"
)

// GateWriter is the planner writer the tool gate submits safe fallbacks
// with.
const GateWriter = "toolgate"

// CallerWriter returns the writer id under which the tool gate proposes
// a caller's calls to the kernel. It is what decision records and
// provenance name, and an approver with this identity is refused: a
// caller cannot approve its own calls.
func CallerWriter(caller string) string { return "caller:" + caller }

// DeriverWriter returns the planner writer id under which the tool gate
// proposes the beliefs a tool's results derive (toolgate's Tool.Derives).
func DeriverWriter(tool string) string { return "derive:" + tool }
