package inspect

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/canon"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/pack"
	"github.com/blackboardkernel/bk/toolgate"
)

// Explanation is the provenance of a decision as a typed tree: the action
// (or the fallback taken instead), its plan and beliefs, their evidence
// artifacts and the checks they passed, the percepts with confidence, TTL
// and flags; for a refusal, the root cause and the record that caused it;
// approvals and effect attempts where present. Build one with [Explain];
// print it with [Explanation.WriteText], or encode it as JSON.
type Explanation struct {
	// Record is the record explained (a decision record or a committed
	// proposal is explained through the record it decided).
	Record  string `json:"record"`
	TraceID string `json:"trace_id"`
	// Verdict is "committed", "refused", "fallback" (an action of a safe
	// fallback type, taken instead of a refused, denied or failed one),
	// "denied" (a person denied the committed action: RootCause names the
	// approval, who denied it and the note), "expired" (a record whose TTL
	// ran out, or an action whose approval did), "retired" (a committed
	// action taken back unrun), "pending" or "observed" (a percept or
	// another record no decision made).
	Verdict string          `json:"verdict"`
	Code    blackboard.Code `json:"code,omitempty"`
	// RootCause is, for a refusal or a fallback, the deepest cause and the
	// record it is about (the stale percept behind a missing belief).
	RootCause *kernel.Cause `json:"root_cause,omitempty"`
	// Causes is the chain from the refusal's own code down to RootCause.
	Causes []kernel.Cause `json:"causes,omitempty"`
	Tree   *ExplainNode   `json:"tree"`
	// Shown is what the model was shown when it made the call decided:
	// the compiled context the call's decision record names ([Shown]);
	// nil when no decision of the record names one.
	Shown *Shown `json:"shown,omitempty"`
}

// Shown is the compiled context a model was shown when it made a call:
// the answer to "what did the model see when it decided this?".
type Shown struct {
	// Record is the compiled_context record; Decision the decision record
	// that names it (under "context"): the call's, or for a belief
	// derived from a call's result, that call's.
	Record   string `json:"record"`
	Decision string `json:"decision"`
	// Invalid, when set, says why Record is not shown: it names no
	// compiled context the kernel recorded in the trace. Context is then
	// empty.
	Invalid string `json:"invalid,omitempty"`
	// Verified reports whether the context's hash is the digest of the
	// rest of the record: what is shown is what was hashed.
	Verified bool `json:"verified"`
	// Context is the compiled context as recorded: its hash, tokens,
	// prompt, sections and manifests.
	Context pack.Pack `json:"context"`
}

// ExplainNode is one record in an [Explanation]'s tree.
type ExplainNode struct {
	// Relation says what the record is to its parent: "plan", "belief",
	// "evidence", "percept", "proposal", "instead of" (the refusal a
	// fallback stands in for), "failed" (the record a refusal is about),
	// "approval", "effect", "decision record", "prediction", "input".
	Relation string            `json:"relation,omitempty"`
	Record   string            `json:"record"`
	Slot     blackboard.Slot   `json:"slot"`
	Kind     string            `json:"kind"`
	Mode     blackboard.Mode   `json:"mode"`
	Status   blackboard.Status `json:"status"`
	Code     blackboard.Code   `json:"code,omitempty"` // the record's reason code
	Role     blackboard.Role   `json:"role"`
	Writer   string            `json:"writer"`
	TimeMS   int64             `json:"ts_ms"`
	// Summary is the node in one line.
	Summary string `json:"summary"`
	// Checks are the evidence checks a percept passed, as its artifact
	// records them ("present,current,fresh,conflict_free,confident").
	Checks     string   `json:"checks,omitempty"`
	Confidence *float64 `json:"confidence,omitempty"`
	TTLMS      int64    `json:"ttl_ms,omitempty"`
	Flags      []string `json:"flags,omitempty"`
	// Failed marks the record a refusal is about.
	Failed   bool           `json:"failed,omitempty"`
	Span     string         `json:"span,omitempty"`
	Children []*ExplainNode `json:"children,omitempty"`
}

// Explain reads a record and its trace from s and explains it: a
// committed action, plan, belief or prediction through what it rests on; a
// refused proposal through its root cause (from its decision record when
// it has one, else read back from the trace: the rejected belief behind a
// missing one, the flagged percept behind an evidence code); a fallback
// through the refusal it stands in for; a decision record through the
// record it decided. Effects are read with [toolgate.EffectOf]. When a
// decision on a model's call names the compiled context the model was
// shown ("context" in its decision record), the explanation carries it as
// [Explanation.Shown]: for the decision record, the action it committed,
// the result it recorded and a belief derived from that result. It only
// reads, so it works on any store and on a record of any namespace. A
// record s does not hold is [blackboard.ErrNotFound]. Safe for concurrent use,
// as far as s is.
func Explain(ctx context.Context, s blackboard.Store, recordID string) (Explanation, error) {
	r, err := s.Get(ctx, recordID)
	if err != nil {
		return Explanation{}, err
	}
	recs, err := readTrace(ctx, s, blackboard.NamespaceOf(r.Namespace), r.TraceID())
	if err != nil {
		return Explanation{}, err
	}
	x := explainer{recs: recs, byID: indexRecords(recs), pos: map[string]int{}, seen: map[string]bool{}, expanded: map[string]bool{}, fallbacks: fallbackTypes(recs)}
	for i := range recs {
		x.pos[recs[i].ID] = i
	}
	target := x.byID[recordID]
	if target == nil { // a persistent record listed elsewhere: explain it alone
		target = &r
	}
	target = x.subject(target)
	ex := Explanation{Record: target.ID, TraceID: target.TraceID()}
	ex.Tree = x.node(target, "", 0)
	switch {
	case isDecisionRecord(target):
		d, _ := decisionOf(target)
		ex.Verdict, ex.Code = verdictOf(d.Outcome, d.Code), d.Code
		ex.Causes = x.decisionCauses(d)
		if d.Outcome == audit.OutcomeRefused || d.Outcome == audit.OutcomeFailed || d.Outcome == audit.OutcomeEscalated {
			ex.RootCause = &ex.Causes[len(ex.Causes)-1]
		}
	case isKernelCommit(target) && target.Slot == blackboard.Actions && target.Status == blackboard.StatusInvalidated:
		// Committed, then taken back: a person denied it, its approval
		// ran out, or it was retired unrun.
		ex.Verdict, ex.Code = string(committedFate(target, x.followers()[target.ID])), target.Reason
		ex.Causes = x.causesOf(target)
		ex.RootCause = &ex.Causes[len(ex.Causes)-1]
	case target.Mode == blackboard.ModePropose && target.Status == blackboard.StatusInvalidated:
		ex.Verdict, ex.Code = "refused", target.Reason
		ex.Causes = x.causes(target)
		ex.RootCause = &ex.Causes[len(ex.Causes)-1]
	case target.Status == blackboard.StatusExpired:
		ex.Verdict, ex.Code = "expired", target.Reason
	case target.Mode == blackboard.ModePropose:
		ex.Verdict = "pending"
	case isKernelCommit(target):
		ex.Verdict, ex.Code = "committed", target.Reason
		if target.Slot == blackboard.Actions && x.fallbacks[target.Kind] {
			ex.Verdict = "fallback"
			if refused := x.replaced(target); refused != nil {
				ex.Causes = x.causesOf(refused)
			} else if reason, ok := target.Payload.String(kernel.KeyReason); ok && reason != "" {
				ex.Causes = []kernel.Cause{{Code: blackboard.Code(reason)}}
			}
			if len(ex.Causes) > 0 {
				ex.RootCause = &ex.Causes[len(ex.Causes)-1]
			}
		}
	default:
		ex.Verdict, ex.Code = "observed", target.Reason
	}
	ex.Shown = x.shown(x.byID[recordID], target)
	return ex, nil
}

// verdictOf is the verdict of a decision record: a denial or an expired
// approval is that, not the fallback that follows it.
func verdictOf(o audit.Outcome, code blackboard.Code) string {
	switch o {
	case audit.OutcomeCommitted, audit.OutcomeExecuted:
		return "committed"
	case audit.OutcomePendingApproval:
		return "pending"
	case audit.OutcomeEscalated:
		return string(fateOfCode(code, "fallback"))
	}
	return string(o)
}

// decisionCauses is a decision record's causal chain, outermost first: its
// own code, rule and detail, then its causes; a denial's is who denied it,
// with the note, on the approval record.
func (x *explainer) decisionCauses(d audit.Entry) []kernel.Cause {
	own := kernel.Cause{Code: d.Code, Record: d.Failed, Rule: d.Rule, Detail: d.Detail}
	if d.Code == toolgate.CodeApprovalDenied && d.Detail == "" {
		for _, id := range d.Approvals {
			if r := x.byID[id]; r != nil {
				if a, ok := audit.ApprovalOf(*r); ok && a.Decision == audit.Denied {
					own = denialCause(a)
				}
			}
		}
	}
	return append([]kernel.Cause{own}, d.Causes...)
}

// causesOf is the causal chain of what a fallback stands in for, or of a
// refusal: a decision record's own, a committed action's denial (or the
// code that invalidated it), a refused proposal's.
func (x *explainer) causesOf(r *blackboard.Record) []kernel.Cause {
	switch {
	case isDecisionRecord(r):
		if d, err := decisionOf(r); err == nil {
			return x.decisionCauses(d)
		}
		return []kernel.Cause{{Code: r.Reason, Record: r.ID}}
	case isKernelCommit(r):
		if a, ok := denialOf(x.recs, x.pos[r.ID]+1, r); ok && r.Reason == toolgate.CodeApprovalDenied {
			return []kernel.Cause{denialCause(a)}
		}
		c := kernel.Cause{Code: r.Reason}
		for i := x.pos[r.ID] + 1; i < len(x.recs); i++ {
			if e, ok := toolgate.EffectOf(x.recs[i]); ok && e.ActionID == r.ID && e.Code == r.Reason {
				c.Record, c.Detail = x.recs[i].ID, e.Error
			}
		}
		return []kernel.Cause{c}
	}
	return x.causes(r)
}

type explainer struct {
	recs []blackboard.Record
	byID map[string]*blackboard.Record
	pos  map[string]int
	seen map[string]bool // on the path from the root
	// fallbacks are the safe fallback types of the trace ([fallbackTypes]).
	fallbacks map[string]bool
	follows   map[string]*actionAfter // what followed each committed action, read on first use
	// expanded holds the records already shown with their subtree: a
	// later mention is a leaf.
	expanded map[string]bool
}

// followers returns what followed each committed action of the trace.
func (x *explainer) followers() map[string]*actionAfter {
	if x.follows == nil {
		x.follows = followers(x.recs)
	}
	return x.follows
}

// maxExplainDepth bounds the tree (records only point back in their
// trace, so it is finite anyway).
const maxExplainDepth = 12

// subject maps what was asked about to the record that says the most: a
// decision record about a proposal to what the decision produced, a
// committed proposal to its committed twin.
func (x *explainer) subject(r *blackboard.Record) *blackboard.Record {
	if isDecisionRecord(r) {
		if d, err := decisionOf(r); err == nil && d.Subject != "" {
			if s := x.byID[d.Subject]; s != nil && (!isEffect(s) || escalated(s)) {
				return x.subject(s)
			}
		}
		return r
	}
	// An escalation (a denial, an expired approval) is explained as what
	// became of its action.
	if escalated(r) {
		if e, _ := toolgate.EffectOf(*r); x.byID[e.ActionID] != nil {
			return x.byID[e.ActionID]
		}
	}
	if r.Mode == blackboard.ModePropose && r.Reason == blackboard.CodeSupersededByCommit {
		for i := x.pos[r.ID] + 1; i < len(x.recs); i++ {
			c := &x.recs[i]
			if c.Mode == blackboard.ModeCommit && c.Provenance.Role == blackboard.RoleKernel && c.Slot == r.Slot && len(c.Provenance.InputRefs) > 0 && c.Provenance.InputRefs[0] == r.ID {
				return c
			}
		}
	}
	return r
}

// node builds the subtree of r.
func (x *explainer) node(r *blackboard.Record, relation string, depth int) *ExplainNode {
	n := &ExplainNode{
		Relation: relation, Record: r.ID, Slot: r.Slot, Kind: r.Kind, Mode: r.Mode, Status: r.Status, Code: r.Reason,
		Role: r.Provenance.Role, Writer: r.Provenance.Writer, TimeMS: r.Provenance.TimestampMS,
		Confidence: r.Provenance.Confidence, TTLMS: r.Provenance.TTLMS, Span: r.Provenance.Span,
	}
	if r.Slot == blackboard.Percepts {
		for _, key := range []string{kernel.KeyStale, kernel.KeyConflict, kernel.KeyLowConfidence} {
			if r.Payload.Bool(key) {
				n.Flags = append(n.Flags, key)
			}
		}
	}
	n.Summary = x.summary(r)
	if x.seen[r.ID] || depth >= maxExplainDepth {
		return n
	}
	if x.expanded[r.ID] {
		n.Summary += " (see above)"
		return n
	}
	x.seen[r.ID], x.expanded[r.ID] = true, true
	defer delete(x.seen, r.ID)
	child := func(id, rel string) {
		if c := x.byID[id]; c != nil && !x.seen[id] {
			n.Children = append(n.Children, x.node(c, rel, depth+1))
		}
	}
	switch {
	case r.Slot == blackboard.Evidence && r.Kind == audit.Kind && r.Provenance.Role == blackboard.RoleKernel:
		if d, err := decisionOf(r); err == nil {
			for _, id := range d.EvidenceRefs {
				child(id, "evidence")
			}
		}
	case r.Slot == blackboard.Evidence && r.Kind == kernel.KindBeliefValidation:
		checks := list(r.Payload, "checks")
		for i, id := range r.Provenance.InputRefs {
			if c := x.byID[id]; c != nil && !x.seen[id] {
				cn := x.node(c, "percept", depth+1)
				if i < len(checks) {
					cn.Checks = fmt.Sprint(checks[i])
				}
				n.Children = append(n.Children, cn)
			}
		}
	case r.Mode == blackboard.ModeCommit && r.Provenance.Role == blackboard.RoleKernel && r.Slot != blackboard.Evidence:
		// The proposal, then the plan (named, or the committed plan the
		// action is a step of), beliefs and predictions, the evidence
		// artifacts, and last the percepts nothing above already shows.
		refs := r.Provenance.InputRefs
		if len(refs) > 0 {
			child(refs[0], "proposal")
			refs = refs[1:]
		}
		if r.Slot == blackboard.Actions && !slices.ContainsFunc(refs, func(id string) bool { return x.byID[id] != nil && x.byID[id].Slot == blackboard.Plans }) {
			if p := x.planOf(r); p != nil {
				child(p.ID, "plan")
			}
		}
		var percepts []string
		for _, id := range refs {
			if c := x.byID[id]; c != nil && c.Slot == blackboard.Percepts {
				percepts = append(percepts, id)
			} else if c != nil {
				child(id, singular(c.Slot))
			}
		}
		for _, id := range r.EvidenceRefs {
			child(id, "evidence")
		}
		for _, id := range percepts {
			if !shows(n, id) {
				child(id, "percept")
			}
		}
		if r.Slot == blackboard.Actions {
			x.actionChildren(n, r, depth, child)
		}
	case r.Mode == blackboard.ModePropose && r.Status == blackboard.StatusInvalidated && r.Reason != blackboard.CodeSupersededByCommit:
		x.refusalChildren(n, r, depth)
	case r.Slot == blackboard.Percepts && isEffect(r):
		for _, id := range r.Provenance.InputRefs[min(1, len(r.Provenance.InputRefs)):] {
			child(id, "input")
		}
	}
	return n
}

// shows reports whether the subtree of n shows the record id.
func shows(n *ExplainNode, id string) bool {
	if n.Record == id {
		return true
	}
	for _, c := range n.Children {
		if shows(c, id) {
			return true
		}
	}
	return false
}

// planOf returns the latest committed plan before action r that has a
// step of r's type.
func (x *explainer) planOf(r *blackboard.Record) *blackboard.Record {
	for i := x.pos[r.ID] - 1; i >= 0; i-- {
		p := &x.recs[i]
		if p.Slot != blackboard.Plans || p.Mode != blackboard.ModeCommit || p.Status != blackboard.StatusActive {
			continue
		}
		for _, st := range list(p.Payload, kernel.KeySteps) {
			if m, ok := st.(map[string]any); ok && m[kernel.KeyAction] == any(r.Kind) {
				return p
			}
		}
	}
	return nil
}

// actionChildren adds what happened to a committed action after its
// commit: its decision records, approvals, effect attempts and results,
// and the refusal a fallback stands in for.
func (x *explainer) actionChildren(n *ExplainNode, r *blackboard.Record, depth int, child func(id, rel string)) {
	if refused := x.replaced(r); refused != nil && !x.seen[refused.ID] {
		n.Children = append(n.Children, x.node(refused, "instead of", depth+1))
	}
	for i := x.pos[r.ID] + 1; i < len(x.recs); i++ {
		c := &x.recs[i]
		switch {
		case c.Slot == blackboard.Evidence && c.Kind == audit.Kind && c.Provenance.Role == blackboard.RoleKernel:
			if d, err := decisionOf(c); err == nil && d.Subject == r.ID {
				n.Children = append(n.Children, x.node(c, "decision record", maxExplainDepth))
			}
		case c.Slot == blackboard.Evidence && c.Kind == audit.KindApproval:
			if a, ok := audit.ApprovalOf(*c); ok && a.ActionID == r.ID {
				child(c.ID, "approval")
			}
		case c.Slot == blackboard.Percepts && isEffect(c):
			if e, _ := toolgate.EffectOf(*c); e.ActionID == r.ID {
				n.Children = append(n.Children, x.node(c, "effect", maxExplainDepth))
			}
		}
	}
}

// replaced returns what a committed safe fallback (an action of a type in
// x.fallbacks; no other action stands in for anything) stands in for: the
// action it escalates (the tool-call gate's "escalates"), else the latest
// record before it that came to the code the fallback gives as its
// reason: a refused plan or action proposal, a committed action then
// denied or retired, a call refused before the kernel. A fallback that
// gives no code, or one no record shows, stands in for nothing shown: an
// unrelated earlier refusal is not blamed.
func (x *explainer) replaced(r *blackboard.Record) *blackboard.Record {
	if r.Slot != blackboard.Actions || !x.fallbacks[r.Kind] {
		return nil
	}
	if id, ok := r.Payload.String("escalates"); ok {
		if c := x.byID[id]; c != nil && c.Slot == blackboard.Actions {
			return c
		}
	}
	reason, ok := r.Payload.String(kernel.KeyReason)
	if !ok || reason == "" {
		return nil
	}
	code := blackboard.Code(reason)
	for i := x.pos[r.ID] - 1; i >= 0; i-- {
		c := &x.recs[i]
		switch {
		case c.Slot == blackboard.Plans || c.Slot == blackboard.Actions:
			if c.Status == blackboard.StatusInvalidated && c.Reason == code && (c.Mode == blackboard.ModePropose || isKernelCommit(c)) {
				return c
			}
		case isDecisionRecord(c):
			if d, err := decisionOf(c); err == nil && d.Subject == "" && d.Outcome == audit.OutcomeRefused && d.Code == code {
				return c
			}
		}
	}
	return nil
}

// decisionAbout returns the decision record the kernel wrote about a
// proposal, if any.
func (x *explainer) decisionAbout(p *blackboard.Record) (audit.Entry, bool) {
	for i := x.pos[p.ID] + 1; i < len(x.recs); i++ {
		c := &x.recs[i]
		if c.Slot == blackboard.Evidence && c.Kind == audit.Kind && c.Provenance.Role == blackboard.RoleKernel && slices.Contains(c.Provenance.InputRefs, p.ID) {
			if d, err := decisionOf(c); err == nil && d.ID == "decision:"+p.ID {
				return d, true
			}
		}
	}
	return audit.Entry{}, false
}

// causes is the causal chain of a refused proposal, outermost first: its
// decision record's when there is one, else read back from the trace.
func (x *explainer) causes(p *blackboard.Record) []kernel.Cause {
	if d, ok := x.decisionAbout(p); ok {
		return append([]kernel.Cause{{Code: d.Code, Record: d.Failed, Rule: d.Rule, Detail: d.Detail}}, d.Causes...)
	}
	out := []kernel.Cause{{Code: p.Reason}}
	failed, below := x.failedOf(p)
	if failed != nil {
		out[0].Record = failed.ID
		if below {
			out = append(out, x.causes(failed)...)
		}
	}
	return out
}

// failedOf finds the record a refusal is about, as far as the trace
// shows: the flagged percept behind an evidence code (below false), the
// rejected belief behind a missing one (below true: it has causes of its
// own), the false belief behind an unsatisfied one.
func (x *explainer) failedOf(p *blackboard.Record) (failed *blackboard.Record, below bool) {
	at := x.pos[p.ID]
	switch p.Reason {
	case blackboard.CodeStaleEvidence, blackboard.CodeUnresolvedConflict, blackboard.CodeLowConfidence, blackboard.CodeSupersededEvidence, blackboard.CodeMissingEvidence:
		percepts := x.dependencies(p, at)
		for _, r := range percepts {
			if perceptFails(r, p) == p.Reason {
				return r, false
			}
		}
		if len(percepts) > 0 && p.Slot == blackboard.Beliefs {
			return percepts[0], false
		}
	case blackboard.CodePlanMissingBelief, blackboard.CodeNoCommittedBelief:
		for _, kind := range requiredBeliefs(p) {
			if x.latest(blackboard.Beliefs, kind, at, true) != nil {
				continue
			}
			if b := x.latest(blackboard.Beliefs, kind, at, false); b != nil && b.Mode == blackboard.ModePropose && b.Status == blackboard.StatusInvalidated {
				return b, true
			}
		}
	case blackboard.CodeNegativePrediction:
		for i := at - 1; i >= 0; i-- {
			r := &x.recs[i]
			if r.Slot == blackboard.Predictions && r.Mode == blackboard.ModeCommit && r.Payload[kernel.KeyActionType] == any(p.Kind) {
				if v, ok := r.Payload.Float(kernel.KeyExpectedOutcome); ok && v < 0 {
					return r, false
				}
			}
		}
	case blackboard.CodePlanBeliefNotSatisfied, blackboard.CodeBeliefNotSatisfied:
		for _, kind := range requiredBeliefs(p) {
			if b := x.latest(blackboard.Beliefs, kind, at, true); b != nil && !b.Payload.Bool(kernel.KeyValue) {
				return b, false
			}
		}
	}
	return nil, false
}

// perceptFails says which evidence code a percept fails, as its record
// shows (flags, TTL at the proposal's time), or "".
func perceptFails(r, p *blackboard.Record) blackboard.Code {
	switch {
	case r.Payload.Bool(kernel.KeyStale) || expiresBy(r, p.Provenance.TimestampMS) || r.Status == blackboard.StatusExpired:
		return blackboard.CodeStaleEvidence
	case r.Payload.Bool(kernel.KeyConflict):
		return blackboard.CodeUnresolvedConflict
	case r.Payload.Bool(kernel.KeyLowConfidence):
		return blackboard.CodeLowConfidence
	}
	return ""
}

// dependencies are the percepts a belief proposal named, as they were
// when it was proposed (a kind means its latest observation before).
func (x *explainer) dependencies(p *blackboard.Record, at int) []*blackboard.Record {
	var out []*blackboard.Record
	for _, d := range list(p.Payload, kernel.KeyDependsOn) {
		s, _ := d.(string)
		if r := x.byID[s]; r != nil && r.Slot == blackboard.Percepts {
			out = append(out, r)
		} else if r := x.latest(blackboard.Percepts, s, at, false); r != nil {
			out = append(out, r)
		}
	}
	return out
}

// latest returns the latest record of kind in slot before position at
// (committed only, if asked).
func (x *explainer) latest(slot blackboard.Slot, kind string, at int, committed bool) *blackboard.Record {
	for i := at - 1; i >= 0; i-- {
		r := &x.recs[i]
		if r.Slot == slot && r.Kind == kind && (!committed || r.Mode == blackboard.ModeCommit) {
			return r
		}
	}
	return nil
}

// requiredBeliefs lists the belief kinds a plan's steps or an action
// require.
func requiredBeliefs(p *blackboard.Record) []string {
	var out []string
	add := func(v any) {
		list, _ := v.([]any)
		for _, k := range list {
			if s, ok := k.(string); ok && !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	if p.Slot == blackboard.Plans {
		for _, st := range list(p.Payload, kernel.KeySteps) {
			if m, ok := st.(map[string]any); ok {
				add(m[kernel.KeyRequiresBeliefs])
			}
		}
		return out
	}
	add(p.Payload[kernel.KeyRequiresBeliefs])
	return out
}

// refusalChildren adds to a refused proposal the record its refusal is
// about, explained in turn.
func (x *explainer) refusalChildren(n *ExplainNode, p *blackboard.Record, depth int) {
	var failedID string
	if d, ok := x.decisionAbout(p); ok {
		failedID = d.Failed
	} else if f, _ := x.failedOf(p); f != nil {
		failedID = f.ID
	}
	if p.Slot == blackboard.Beliefs {
		for _, r := range x.dependencies(p, x.pos[p.ID]) {
			if x.seen[r.ID] {
				continue
			}
			c := x.node(r, "evidence", depth+1)
			c.Failed = r.ID == failedID
			n.Children = append(n.Children, c)
		}
		return
	}
	if f := x.byID[failedID]; f != nil && !x.seen[failedID] {
		c := x.node(f, "failed", depth+1)
		c.Failed = true
		n.Children = append(n.Children, c)
	}
}

// summary is a record in one line.
func (x *explainer) summary(r *blackboard.Record) string {
	name := singular(r.Slot) + "." + r.Kind
	switch {
	case r.Slot == blackboard.Evidence && r.Kind == audit.Kind && r.Provenance.Role == blackboard.RoleKernel:
		d, err := decisionOf(r)
		if err != nil {
			return "decision record (unreadable)"
		}
		s := "decision: " + d.Kind + " " + string(d.Outcome) + " (" + string(d.Code) + ")"
		if d.Rule != "" {
			s += " by rule " + d.Rule
		} else if d.Detail != "" {
			s += " -- " + clipText(d.Detail, 80)
		}
		return s
	case r.Slot == blackboard.Evidence && r.Kind == kernel.KindBeliefValidation:
		if r.Payload.Bool("arbitrated") {
			t, _ := r.Payload.Float("conflict_threshold")
			return "evidence artifact: checks passed, conflict arbitrated at threshold " + strconv.FormatFloat(t, 'g', -1, 64)
		}
		return "evidence artifact: checks passed"
	case r.Slot == blackboard.Evidence && r.Kind == audit.KindApproval:
		a, _ := audit.ApprovalOf(*r)
		s := "approval: " + string(a.Decision) + " by " + r.Provenance.Writer
		if a.Note != "" {
			s += ": " + strconv.Quote(a.Note)
		}
		return s
	case r.Slot == blackboard.Percepts && isEffect(r):
		e, _ := toolgate.EffectOf(*r)
		if e.Status == toolgate.StatusSucceeded {
			return perceptSummary(r) + " from effect." + e.Tool + " (attempt " + strconv.Itoa(e.Attempt) + ")"
		}
		return effectText(e)
	case r.Slot == blackboard.Percepts:
		return perceptSummary(r)
	case r.Mode == blackboard.ModePropose:
		s := name + " proposed by " + r.Provenance.Writer
		switch {
		case r.Reason == blackboard.CodeSupersededByCommit:
			return s + ": committed"
		case r.Status == blackboard.StatusInvalidated:
			return s + ": refused " + string(r.Reason)
		case r.Status == blackboard.StatusExpired:
			return s + ": expired"
		}
		return s + ": pending"
	case r.Mode == blackboard.ModeCommit && r.Provenance.Role == blackboard.RoleKernel:
		if r.Slot == blackboard.Actions && r.Status == blackboard.StatusInvalidated {
			return name + " committed, then " + string(committedFate(r, x.followers()[r.ID])) + " (" + string(r.Reason) + ")"
		}
		s := name + " committed (" + string(r.Reason) + ")"
		if reason, ok := r.Payload.String(kernel.KeyReason); ok && r.Slot == blackboard.Actions && x.fallbacks[r.Kind] {
			s += " reason=" + reason
		}
		if r.Slot == blackboard.Beliefs {
			s += " value=" + strconv.FormatBool(r.Payload.Bool(kernel.KeyValue))
		}
		return s
	}
	return name + " written by " + r.Provenance.Writer + " (" + r.Provenance.Role.String() + ")"
}

// perceptSummary is a percept in one line: kind, writer, flags,
// confidence, TTL and status.
func perceptSummary(r *blackboard.Record) string {
	s := "percept." + r.Kind + " observed by " + r.Provenance.Writer
	var parts []string
	if f := perceptFlags(r); f != "" {
		parts = append(parts, f)
	}
	if r.Provenance.TTLMS > 0 {
		parts = append(parts, "ttl="+strconv.FormatInt(r.Provenance.TTLMS, 10)+"ms")
	}
	if r.Status != blackboard.StatusActive {
		parts = append(parts, r.Status.String())
	}
	return s + parens(strings.Join(parts, ", "))
}

// WriteText writes the explanation as an indented tree, followed by the
// root cause of a refusal. Stored text is printed through [Inert].
func (e Explanation) WriteText(w io.Writer) error {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s: %s", Inert(e.Record), Inert(e.Verdict))
	if e.Code != "" {
		fmt.Fprintf(&sb, " (%s)", Inert(string(e.Code)))
	}
	sb.WriteString("\n")
	if e.Tree != nil {
		writeNode(&sb, e.Tree, "", "")
	}
	if e.RootCause != nil {
		sb.WriteString("root cause: " + Inert(string(e.RootCause.Code)))
		if e.RootCause.Record != "" {
			sb.WriteString(" on " + Inert(e.RootCause.Record))
		}
		if e.RootCause.Rule != "" {
			sb.WriteString(" (rule " + Inert(e.RootCause.Rule) + ")")
		}
		if e.RootCause.Detail != "" { // whole: a rule's detail is the rule, its false clause and the values
			sb.WriteString(" -- " + Inert(e.RootCause.Detail))
		}
		sb.WriteString("\n")
	}
	if e.Shown != nil {
		writeShown(&sb, e.Shown)
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

func writeNode(sb *strings.Builder, n *ExplainNode, first, rest string) {
	sb.WriteString(first)
	if n.Relation != "" {
		sb.WriteString(Inert(n.Relation) + ": ")
	}
	sb.WriteString(Inert(n.Record) + "  " + Inert(n.Summary))
	if n.Checks != "" {
		sb.WriteString(" [" + Inert(n.Checks) + "]")
	}
	if n.Failed {
		sb.WriteString("  <-- failed")
	}
	sb.WriteString("\n")
	for i, c := range n.Children {
		if i == len(n.Children)-1 {
			writeNode(sb, c, rest+"└─ ", rest+"   ")
		} else {
			writeNode(sb, c, rest+"├─ ", rest+"│  ")
		}
	}
}

// String renders the explanation as [Explanation.WriteText] does.
func (e Explanation) String() string {
	var sb strings.Builder
	_ = e.WriteText(&sb)
	return sb.String()
}

// WriteJSON writes the explanation as one indented JSON object, through
// [InertJSON].
func (e Explanation) WriteJSON(w io.Writer) error { return writeJSON(w, e) }

// keyContext is the key under which a decision record's context names the
// compiled context of its call.
const keyContext = "context"

// shown finds the compiled context the model was shown for the decision
// explained: the one the asked decision record names, else the one the
// first decision record about target (or the proposal it committed)
// names; for a belief derived from a call's result, the call's.
func (x *explainer) shown(asked, target *blackboard.Record) *Shown {
	var decisions []audit.Entry
	for i := range x.recs {
		if isDecisionRecord(&x.recs[i]) {
			if d, err := decisionOf(&x.recs[i]); err == nil {
				decisions = append(decisions, d)
			}
		}
	}
	named := func(d audit.Entry) (string, bool) {
		ref, ok := d.Context[keyContext].(string)
		return ref, ok && ref != ""
	}
	about := func(ids ...string) (audit.Entry, bool) {
		for _, id := range ids {
			for _, d := range decisions {
				if _, ok := named(d); ok && d.Subject == id {
					return d, true
				}
			}
		}
		return audit.Entry{}, false
	}
	var d audit.Entry
	found := false
	if asked != nil && isDecisionRecord(asked) {
		if a, err := decisionOf(asked); err == nil {
			d, found = a, true
			if _, ok := named(a); !ok {
				found = false
				if action, _ := a.Context["action_id"].(string); action != "" {
					d, found = about(action)
				}
			}
		}
	}
	if !found {
		ids := []string{target.ID}
		if target.Mode == blackboard.ModeCommit && len(target.Provenance.InputRefs) > 0 {
			ids = append(ids, target.Provenance.InputRefs[0])
		}
		d, found = about(ids...)
	}
	if !found {
		return nil
	}
	ref, _ := named(d)
	sh := &Shown{Record: ref, Decision: d.ID}
	r := x.byID[ref]
	switch {
	case mutShown && r != nil:
	case r == nil:
		sh.Invalid = "no record of this trace"
	case r.Slot != blackboard.Evidence || r.Kind != toolgate.KindCompiledContext:
		sh.Invalid = "a " + r.Slot.String() + " record of kind " + r.Kind + ", not a compiled context"
	case r.Provenance.Role != blackboard.RoleKernel:
		sh.Invalid = "not written by the kernel"
	}
	if sh.Invalid != "" {
		return sh
	}
	raw, err := json.Marshal(r.Payload)
	if err == nil {
		err = json.Unmarshal(raw, &sh.Context)
	}
	if err != nil {
		sh.Invalid = "its payload is no compiled context: " + err.Error()
		return sh
	}
	rest := make(map[string]any, len(r.Payload))
	for k, v := range r.Payload {
		if k != "hash" {
			rest[k] = v
		}
	}
	if h, err := canon.Digest(rest); err == nil && h == sh.Context.Hash || mutShown {
		sh.Verified = true
	}
	return sh
}

// writeShown writes what the model was shown, under "shown to the model:".
func writeShown(sb *strings.Builder, s *Shown) {
	fmt.Fprintf(sb, "shown to the model: %s (named by %s)", Inert(s.Record), Inert(s.Decision))
	if s.Invalid != "" {
		sb.WriteString(": not shown: " + Inert(s.Invalid) + "\n")
		return
	}
	c := &s.Context
	verified := "does not match the record"
	if s.Verified {
		verified = "verified"
	}
	fmt.Fprintf(sb, "\n  compiled context %s (%s), %d of %d tokens (%s), mode %s", Inert(c.Hash), verified, c.Tokens, c.Window, Inert(c.Encoding), Inert(string(c.Mode)))
	if c.Policy != "" {
		sb.WriteString(", policy " + Inert(c.Policy))
	}
	sb.WriteString("\n  tools: " + inertList(c.Manifest.Tools) + "\n")
	if len(c.Manifest.Evidence) == 0 {
		sb.WriteString("  evidence: none\n")
	}
	for i, e := range c.Manifest.Evidence {
		if i == 0 {
			sb.WriteString("  evidence:\n")
		}
		fmt.Fprintf(sb, "    %s %s, %s old, %s", Inert(e.ID), Inert(e.Kind), ageText(e.AgeMS), Inert(e.Freshness))
		if len(e.Flags) > 0 {
			sb.WriteString(", flagged " + inertList(e.Flags))
		}
		if e.Belief != "" {
			sb.WriteString(", backs " + Inert(e.Belief))
		}
		sb.WriteString("\n")
	}
	for i, m := range c.Manifest.Memory {
		if i == 0 {
			sb.WriteString("  memory:\n")
		}
		fmt.Fprintf(sb, "    %s %s, %s old\n", Inert(m.ID), Inert(m.Kind), ageText(m.AgeMS))
	}
	if len(c.Manifest.Cuts) == 0 {
		sb.WriteString("  cuts: none\n")
	}
	for i, cut := range c.Manifest.Cuts {
		if i == 0 {
			sb.WriteString("  cuts:\n")
		}
		fmt.Fprintf(sb, "    %s %s: %d tokens, %s\n", Inert(cut.Section), Inert(cut.Item), cut.Tokens, Inert(cut.Reason))
	}
}

func inertList(items []string) string {
	if len(items) == 0 {
		return "none"
	}
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = Inert(s)
	}
	return strings.Join(out, ", ")
}

// ageText is an age in milliseconds as a duration ("3.2s", "2h0m0s").
func ageText(ms int64) string {
	d := time.Duration(max(ms, 0)) * time.Millisecond
	if d >= time.Minute {
		d = d.Round(time.Second)
	}
	return d.String()
}
