package pack

import (
	"github.com/blackboardkernel/bk/budget"
	"github.com/blackboardkernel/bk/failure"
	"github.com/blackboardkernel/bk/internal/packrec"
	"github.com/blackboardkernel/bk/toolgate"
)

// The sections of a compiled context, in the order of the priority stack
// (the order of the prompt): critical signals first, then the top zone's
// mission, constraints and policy, the middle zone's progress, evidence and
// memory, the bottom zone's task, last result and tools, and the run
// controls last.
const (
	sectionSignals     = "signals"
	sectionMission     = "mission"
	sectionConstraints = "constraints"
	sectionPolicy      = "policy"
	sectionProgress    = "progress"
	sectionEvidence    = "evidence"
	sectionMemory      = "memory"
	sectionTask        = "task"
	sectionLastResult  = "last_result"
	sectionTools       = "tools"
	sectionControls    = "controls"
)

// SectionNames returns the sections in the order of the priority stack.
func sectionNames() []string {
	return []string{sectionSignals, sectionMission, sectionConstraints, sectionPolicy,
		sectionProgress, sectionEvidence, sectionMemory,
		sectionTask, sectionLastResult, sectionTools, sectionControls}
}

// Run is the run context a context is compiled for.
type Run struct {
	ID        string // the run
	TraceID   string // the trace whose evidence is shown and where the record goes
	Session   string
	Namespace string
	// ReadOnly is the safety mode the gate enforces for the trace
	// ([toolgate.Controls.ReadOnly]; [Govern] reads it from the trace's
	// run controls); the compiled context only shows it, as the mode
	// "read_only" (else "normal").
	ReadOnly bool
	// Budget, when set, is the run's budget: what is left of each limited
	// resource goes to the run controls.
	Budget *budget.Run
	Role   string // the role the model acts in
	Intent string // the intent the turn serves
}

// Input is the turn's own text: what the caller knows that the store does
// not hold. It carries no conversation: a step is given its task and the
// run's progress as one line per earlier step, never the earlier steps'
// raw outputs.
type Input struct {
	Mission     string   // the run's goal; never cut
	Constraints []string // immutable constraints; never cut
	// Signals are critical (P0) signals: they go at the top of the prompt.
	Signals    []string
	Progress   []Step // the run's earlier steps, compressed
	Task       string // the current step's task
	LastResult string // the previous step's result
	// Tools are the tools to show, as the gate surfaced them; one that
	// Policy prohibits is left out all the same.
	Tools  []toolgate.Spec
	Policy PolicySummary
}

// Step is one earlier step of the run, compressed to a line.
type Step struct {
	Turn int    `json:"turn"`
	Tool string `json:"tool,omitempty"`
	OK   bool   `json:"ok"`
	// Note is one line: what the step established or why it failed.
	Note string `json:"note,omitempty"`
}

// Steps compresses a worker's trajectory ([failure.Grant.Trajectory]) to
// steps: a failed turn's note is its status and failure category.
func stepsOf(t []failure.TrajectoryEntry) []Step {
	out := make([]Step, len(t))
	for i, e := range t {
		out[i] = Step{Turn: i + 1, Tool: e.Tool, OK: e.Status == ""}
		if !out[i].OK {
			out[i].Note = string(e.Status) + " (" + string(e.Category) + ")"
		}
	}
	return out
}

// PolicySummary is the governance in force for the run, as the model is to be
// told it: the rules (one line each), the tools that need an approval,
// the prohibited tools, and what the agent must refuse or escalate. Hash
// names the gate's policy snapshot it was resolved from ("" when none).
type PolicySummary struct {
	Hash         string   `json:"hash,omitempty"`
	Rules        []string `json:"rules,omitempty"`
	Approval     []string `json:"approval,omitempty"`
	Prohibited   []string `json:"prohibited,omitempty"`
	MustRefuse   []string `json:"must_refuse,omitempty"`
	MustEscalate []string `json:"must_escalate,omitempty"`
}

// Pack is a compiled context: the prompt, and the manifest of the policy
// and tools it shows. Its record ([Pack.Record]) holds it whole: each
// section's share of the window and tokens, and the manifests of the
// evidence, memory and run controls shown and of every cut.
type Pack struct {
	// Hash is "sha256:" and the hex SHA-256 of the canonical JSON of every
	// other field: same inputs and clock, same hash.
	Hash     string `json:"hash,omitempty"`
	Encoding string `json:"encoding"`
	Window   int    `json:"window"`
	// Tokens is the prompt's length in the encoding's tokens.
	Tokens int    `json:"tokens"`
	Mode   string `json:"mode"` // "normal" or "read_only" ([Run.ReadOnly])
	Intent string `json:"intent,omitempty"`
	Role   string `json:"role,omitempty"`
	Policy string `json:"policy,omitempty"` // the policy snapshot's hash
	Prompt string `json:"prompt"`
	// Manifest says what the prompt holds; the record holds more (each
	// section's share and tokens, the evidence and memory shown record by
	// record, the run controls and every cut).
	Manifest Manifest `json:"manifest"`

	sections []sectionUse
	traceID  string
	refs     []string // the records shown, for the record's input refs
}

// Manifest says what a compiled context shows: the policy in force and
// the tools. The evidence and memory shown (record by record), the run
// controls and every cut (its section, the item, the tokens cut and the
// reason: "over_budget", "compressed", "evicted" or "prohibited") are in
// the compiled context's record ([Pack.Record]).
type Manifest struct {
	Policy PolicySummary `json:"policy"`
	Tools  []string      `json:"tools"`

	evidence []evidenceItem
	memory   []memoryItem
	controls runControls
	cuts     []sectionCut
}

// The shapes of the record's sections and manifests.
type (
	sectionUse   = packrec.Section
	evidenceItem = packrec.Evidence
	memoryItem   = packrec.Memory
	runControls  = packrec.Controls
	resourceLeft = packrec.Left
	sectionCut   = packrec.Cut
)

// Freshness of a record shown as evidence.
const (
	freshnessFresh = "fresh" // within its TTL, or without one
	freshnessStale = "stale" // past its TTL, expired, or flagged stale by its source
)

// The flags a record shown as evidence may carry. A record with a flag is
// never shown as a current fact: its line starts with the flag in capitals.
const (
	flagStale         = "stale"
	flagConflicted    = "conflicted"
	flagInvalidated   = "invalidated"
	flagSuperseded    = "superseded"
	flagLowConfidence = "low_confidence"
)

// Why an item was cut.
const (
	reasonBudget     = "over_budget" // its section's budget could not hold it
	reasonCompressed = "compressed"  // above 90 % of the window: replaced by a summary
	reasonEvicted    = "evicted"     // above 90 % of the window: removed
	reasonProhibited = "prohibited"  // a tool the policy prohibits
)

// The safety modes as a compiled context shows and records them.
const (
	modeNormal   = "normal"
	modeReadOnly = "read_only"
)

// mode is the run's safety mode as the compiled context shows it.
func (r Run) mode() string {
	if r.ReadOnly {
		return modeReadOnly
	}
	return modeNormal
}
