package inspect

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/chain"
	"github.com/blackboardkernel/bk/internal/kernelhook"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
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
	Verdict string      `json:"verdict"`
	Code    reason.Code `json:"code,omitempty"`
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
	// Receipt is the explained record's chain link (package chain), as
	// its store recorded it: a decision record's is the receipt its call
	// returned (toolgate.Result.Receipt). Empty for a store that keeps no
	// chain.
	Receipt string `json:"receipt,omitempty"`
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
	Code     reason.Code       `json:"code,omitempty"` // the record's reason code
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
// record it decided. Effects are read with [audit.EffectOf]. When a
// decision on a model's call names the compiled context the model was
// shown ("context" in its decision record), the explanation carries it as
// [Explanation.Shown]: for the decision record, the action it committed,
// the result it recorded and a belief derived from that result. It only
// reads, so it works on any store and on a record of any namespace. A
// record s does not hold is [blackboard.ErrNotFound]. Safe for concurrent use,
// as far as s is.
func Explain(ctx context.Context, s store.Store, recordID string) (Explanation, error) {
	r, err := s.Get(ctx, recordID)
	if err != nil {
		return Explanation{}, err
	}
	recs, err := readTrace(ctx, s, cmp.Or(r.Namespace, blackboard.DefaultNamespace), r.Provenance.TraceID)
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
	ex := Explanation{Record: target.ID, TraceID: target.Provenance.TraceID}
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
			} else if why, ok := target.Payload["reason"].(string); ok && why != "" {
				ex.Causes = []kernel.Cause{{Code: reason.Code(why)}}
			}
			if len(ex.Causes) > 0 {
				ex.RootCause = &ex.Causes[len(ex.Causes)-1]
			}
		}
	default:
		ex.Verdict, ex.Code = "observed", target.Reason
	}
	ex.Shown = x.shown(x.byID[recordID], target)
	if cs, ok := s.(store.Chainer); ok {
		for e, err := range cs.Chain(ctx, cmp.Or(target.Namespace, blackboard.DefaultNamespace), target.Provenance.TraceID) {
			if err != nil {
				return Explanation{}, err
			}
			if e.Op == chain.OpAppend && e.Record.ID == target.ID {
				ex.Receipt = e.Link.String()
				break
			}
		}
	}
	return ex, nil
}

// verdictOf is the verdict of a decision record: a denial or an expired
// approval is that, not the fallback that follows it.
func verdictOf(o audit.Outcome, code reason.Code) string {
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
	if d.Code == reason.ApprovalDenied && d.Detail == "" {
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
		if a, ok := denialOf(x.recs, x.pos[r.ID]+1, r); ok && r.Reason == reason.ApprovalDenied {
			return []kernel.Cause{denialCause(a)}
		}
		c := kernel.Cause{Code: r.Reason}
		for i := x.pos[r.ID] + 1; i < len(x.recs); i++ {
			if e, ok := audit.EffectOf(x.recs[i]); ok && e.ActionID == r.ID && e.Code == r.Reason {
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
		if e, _ := audit.EffectOf(*r); x.byID[e.ActionID] != nil {
			return x.byID[e.ActionID]
		}
	}
	if r.Mode == blackboard.ModePropose && r.Reason == reason.SupersededByCommit {
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
		for _, key := range []string{"stale", "conflict", "low_confidence"} {
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
	case r.Slot == blackboard.Evidence && r.Kind == kernelhook.KindBeliefValidation:
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
	case r.Mode == blackboard.ModePropose && r.Status == blackboard.StatusInvalidated && r.Reason != reason.SupersededByCommit:
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
		for _, st := range list(p.Payload, "steps") {
			if m, ok := st.(map[string]any); ok && m["action"] == any(r.Kind) {
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
			if e, _ := audit.EffectOf(*c); e.ActionID == r.ID {
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
	if id, ok := r.Payload["escalates"].(string); ok {
		if c := x.byID[id]; c != nil && c.Slot == blackboard.Actions {
			return c
		}
	}
	why, ok := r.Payload["reason"].(string)
	if !ok || why == "" {
		return nil
	}
	code := reason.Code(why)
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
