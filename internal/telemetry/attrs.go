package telemetry

// The attributes the kernel and the gate put on their spans, metrics and
// debug logs (docs/observability.md has the full table).
const (
	AttrNamespace   = "bk.namespace"    // the kernel's namespace
	AttrTraceID     = "bk.trace_id"     // the blackboard trace (episode) id
	AttrSlot        = "bk.slot"         // the slot written or decided
	AttrKind        = "bk.kind"         // the record's kind (an action type, a tool's action)
	AttrRecordID    = "bk.record_id"    // the record written, or the proposal decided
	AttrCommittedID = "bk.committed_id" // the record a commit wrote
	AttrRole        = "bk.role"         // the role of the handle that asked
	AttrWriter      = "bk.writer"       // the writer id of that handle
	AttrCode        = "bk.code"         // the resulting code
	AttrRule        = "bk.rule"         // the constraint or rule that decided a refusal
	AttrFailed      = "bk.failed"       // the record that failed the check
	AttrRootCause   = "bk.root_cause"   // the deepest cause of a refusal
	AttrExpired     = "bk.expired"      // how many records an expiry marked
)
