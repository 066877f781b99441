package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/snapshot"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/toolgate"
)

// Stages of a [Comparison].
const (
	stageCall     = "call"
	stageEffect   = "effect"
	stageEscalate = "escalate"
	stageFallback = "fallback"
	stageDerive   = "derive"
	stageExecute  = "execute" // a committed action refused when it was to run
	stagePropose  = "propose"
)

// replayer is one replay: the source it reads, the kernel and gates it
// builds over a fresh memory store, and what it learnt on the way. It is
// used by one goroutine.
type replayer struct {
	src       store.Store
	ns, trace string
	cfg       *config

	// From the first pass over the trace.
	results map[string]blackboard.Record // source action -> its first recorded result or failure
	commits map[string]blackboard.Record // source proposal -> the kernel's commit of it
	hashes  []string                     // policy hashes named, in order
	firstMS int64

	store    *capture
	nowMS    int64
	gates    map[string]*toolgate.Gate // by recorded policy hash
	k        *kernel.Kernel            // the first gate's, for the records no gate writes
	policies map[string]snapshot.Policy

	// The walk's state.
	step       int
	callSteps  map[int]bool
	stepAction string                    // the source action the current step is about
	current    string                    // the source action whose recorded result the effect returns
	callers    map[string]int64          // source proposals of gate calls -> time
	called     map[string]int64          // source commits of gate calls -> their proposal's time
	actions    map[string]string         // source action -> replayed action
	back       map[string]string         // replayed action -> source action ("" when the record has none)
	actionGate map[string]*toolgate.Gate // source action -> the gate that replayed it
	ids        map[string]string         // other source records -> their replayed copies
	recorded   []item
	proposed   []item // planners' proposals, paired as they are replayed
	notes      map[string]bool
}

// outcome is what one decision came to, on one side.
type outcome struct {
	o    audit.Outcome
	code reason.Code
}

// item is one decision on one side, before pairing.
type item struct {
	step       int
	key        string
	id         string
	kind, tool string
	stage      string
	out        outcome
	pair       *item // for proposals: the replayed side
}

func newReplayer(src store.Store, ns, trace string, cfg *config) *replayer {
	return &replayer{src: src, ns: ns, trace: trace, cfg: cfg,
		results: map[string]blackboard.Record{}, commits: map[string]blackboard.Record{},
		store: &capture{Store: memstore.New()}, gates: map[string]*toolgate.Gate{}, policies: map[string]snapshot.Policy{},
		callSteps: map[int]bool{}, callers: map[string]int64{}, called: map[string]int64{}, actions: map[string]string{}, back: map[string]string{},
		actionGate: map[string]*toolgate.Gate{}, ids: map[string]string{}, notes: map[string]bool{}}
}

func (r *replayer) close() {
	for _, g := range r.gates {
		g.Close()
	}
	r.store.Close()
}

func (r *replayer) fail(sentinel error, record, policy, why string, cause error) error {
	msg := fmt.Sprintf("trace %q", r.trace)
	if policy != "" {
		msg += ", policy " + policy
	}
	if record != "" {
		msg += ", record " + record
	}
	if why != "" {
		msg += ": " + why
	}
	if cause != nil {
		return fmt.Errorf("%w: %s: %w", sentinel, msg, cause)
	}
	return fmt.Errorf("%w: %s", sentinel, msg)
}

func (r *replayer) note(format string, args ...any) { r.notes[fmt.Sprintf(format, args...)] = true }

// clock is the replay kernel's: the recorded time of what is replayed.
func (r *replayer) clock() time.Time { return time.UnixMilli(r.nowMS) }

// scan is the first pass: each action's recorded result, each proposal's
// commit, and the policies the decision records name.
func (r *replayer) scan(ctx context.Context) error {
	n := 0
	for rec, err := range r.src.ListTrace(ctx, r.ns, r.trace) {
		if err != nil {
			return err
		}
		if n == 0 {
			if ns := cmpNS(rec.Namespace); ns != r.ns {
				return r.fail(ErrNoTrace, "", "", "it belongs to namespace "+quote(ns), nil)
			}
			r.firstMS = rec.Provenance.TimestampMS
		}
		n++
		switch {
		case rec.Slot == blackboard.Percepts:
			if eff, ok := audit.EffectOf(rec); ok && (eff.Status == audit.StatusSucceeded || eff.Status == audit.StatusFailed) {
				if _, seen := r.results[eff.ActionID]; !seen {
					r.results[eff.ActionID] = rec
				}
			}
		case rec.Mode == blackboard.ModeCommit && rec.Provenance.Role == blackboard.RoleKernel && rec.Slot != blackboard.Evidence &&
			len(rec.Provenance.InputRefs) > 0:
			if _, seen := r.commits[rec.Provenance.InputRefs[0]]; !seen {
				r.commits[rec.Provenance.InputRefs[0]] = rec
			}
		default:
			if d, ok := audit.Of(rec); ok {
				if h, _ := d.Context["policy"].(string); h != "" && !slices.Contains(r.hashes, h) {
					r.hashes = append(r.hashes, h)
				}
			}
		}
	}
	if n == 0 {
		return r.fail(ErrNoTrace, "", "", "namespace "+quote(r.ns)+" holds no record of it", nil)
	}
	if len(r.hashes) == 0 {
		return r.fail(ErrNoPolicyNamed, "", "", "", nil)
	}
	return nil
}

// walk is the second pass: every record of the trace in order, each
// replayed as its kind requires.
func (r *replayer) walk(ctx context.Context) error {
	started := false
	for rec, err := range r.src.ListTrace(ctx, r.ns, r.trace) {
		if err != nil {
			return err
		}
		if !started {
			started = true
			r.nowMS = rec.Provenance.TimestampMS
			for _, c := range r.cfg.constraints {
				if _, err := r.k.Symbolic("replay").CommitConstraint(ctx, r.trace, c, blackboard.ScopeEpisode); err != nil {
					return r.fail(ErrInvalidOption, "", "", "constraint "+quote(c.Name), err)
				}
			}
		}
		if err := r.replay(ctx, rec); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// gateWriter reports whether a planner's proposal was the gate's own (a
// call, a derived belief, a fallback), which the replayed gate makes
// again itself.
func gateWriter(w string) bool {
	return strings.HasPrefix(w, audit.CallerWriter("")) || strings.HasPrefix(w, audit.DeriverWriter("")) || w == "toolgate"
}

func (r *replayer) replay(ctx context.Context, rec blackboard.Record) error {
	p := rec.Provenance
	switch {
	case rec.Slot == blackboard.Actions && rec.Mode == blackboard.ModePropose && strings.HasPrefix(p.Writer, audit.CallerWriter("")):
		r.callers[rec.ID] = p.TimestampMS
	case rec.Slot == blackboard.Actions && rec.Mode == blackboard.ModeCommit && p.Role == blackboard.RoleKernel && len(p.InputRefs) > 0:
		if ts, ok := r.callers[p.InputRefs[0]]; ok {
			r.called[rec.ID] = ts
		}
	case rec.Slot == blackboard.Evidence && rec.Kind == audit.Kind:
		d, ok := audit.Of(rec)
		if _, gate := d.Context["policy"]; !ok || !gate {
			return nil // not the gate's (an orchestrator's, say): its proposal, if any, is replayed as a planner's
		}
		if r.isCall(d) {
			r.newStep(rec.Provenance.TimestampMS)
			r.callSteps[r.step] = true
			if err := r.call(ctx, d); err != nil {
				return err
			}
			r.recorded = append(r.recorded, r.itemOf(d, stageCall, "", r.step))
			return nil
		}
		stage, act := classify(d)
		r.recorded = append(r.recorded, r.itemOf(d, stage, act, r.step))
	case rec.Slot == blackboard.Evidence && rec.Kind == audit.KindApproval && p.Role == blackboard.RoleApprover:
		r.nowMS = p.TimestampMS
		return r.approval(ctx, rec)
	case rec.Slot == blackboard.Evidence && rec.Kind == audit.KindControls && p.Role == blackboard.RoleKernel:
		r.nowMS = p.TimestampMS
		return r.restrict(ctx, rec)
	case rec.Slot == blackboard.Evidence && rec.Kind == audit.KindRequest && p.Role == blackboard.RoleKernel:
		r.nowMS = p.TimestampMS
		return r.request(ctx, rec)
	case rec.Slot == blackboard.Evidence && rec.Kind == audit.KindCompiledContext && p.Role == blackboard.RoleKernel:
		r.nowMS = p.TimestampMS
		out, err := r.k.Governor().Append(ctx, kernel.Follow{Role: blackboard.RoleKernel, Entry: kernel.Entry{
			TraceID: r.trace, Slot: blackboard.Evidence, Kind: rec.Kind, Payload: rec.Payload.Clone(), InputRefs: r.refs(ctx, rec.ID, p.InputRefs)}})
		if err != nil {
			return err
		}
		r.ids[rec.ID] = out.ID
	case rec.Slot == blackboard.Percepts && p.Role == blackboard.RoleTool:
		if eff, ok := audit.EffectOf(rec); ok {
			if eff.ActionID != r.stepAction && (eff.Status == audit.StatusAttempted || eff.Status == audit.StatusEscalated || eff.Status == audit.StatusRefused) {
				r.newStep(p.TimestampMS)
				return r.execute(ctx, eff.ActionID)
			}
			return nil
		}
		r.nowMS = p.TimestampMS
		return r.write(ctx, rec, r.k.Handle(blackboard.RoleTool, p.Writer).Write)
	case rec.Mode == blackboard.ModePropose && (p.Role == blackboard.RolePlanner || p.Role == blackboard.RoleSimulator) && !gateWriter(p.Writer):
		r.newStep(p.TimestampMS)
		return r.propose(ctx, rec)
	case rec.Slot == blackboard.Constraints && p.Role == blackboard.RoleSymbolic:
		r.nowMS = p.TimestampMS
		return r.write(ctx, rec, r.k.Symbolic(p.Writer).Write)
	case rec.Slot == blackboard.Evidence && p.Role == blackboard.RoleEvidence:
		r.nowMS = p.TimestampMS
		return r.write(ctx, rec, r.k.Handle(blackboard.RoleEvidence, p.Writer).Write)
	}
	return nil
}

// newStep starts the replay of a call, a run of an action or a proposal,
// recorded at time ms.
func (r *replayer) newStep(ms int64) {
	r.step++
	r.store.step = r.step
	r.nowMS = ms
	r.stepAction, r.current = "", ""
}

// isCall reports whether d is the gate's first decision on a call: a
// refusal before the kernel, the kernel's refusal of a caller's proposal,
// or the commit of one (pending approval or not).
func (r *replayer) isCall(d audit.Entry) bool {
	if _, derived := d.Context["derived_from"]; derived {
		return false
	}
	if _, fallback := d.Context["escalates"]; fallback {
		return false
	}
	switch d.Outcome {
	case audit.OutcomeRefused:
		if d.Subject == "" {
			_, tool := d.Context["tool"]
			return tool
		}
		// The kernel's refusal is about the proposal; a refusal about a
		// committed action was made when it was to run.
		_, proposal := r.callers[d.Subject]
		return proposal
	case audit.OutcomeCommitted, audit.OutcomePendingApproval:
		_, ok := r.called[d.Subject]
		return ok
	}
	return false
}

// classify names the stage of a decision record that is not a call's
// first, and the action it is about.
func classify(d audit.Entry) (stage, action string) {
	str := func(k string) string { s, _ := d.Context[k].(string); return s }
	first := func() string {
		if len(d.EvidenceRefs) > 0 {
			return d.EvidenceRefs[0]
		}
		return d.Subject
	}
	switch {
	case str("derived_from") != "":
		return stageDerive, str("action_id")
	case str("escalates") != "":
		return stageFallback, str("escalates")
	case d.Outcome == audit.OutcomeExecuted || d.Outcome == audit.OutcomeFailed:
		return stageEffect, first()
	case d.Outcome == audit.OutcomeEscalated:
		return stageEscalate, first()
	}
	return stageExecute, first()
}

func (r *replayer) itemOf(d audit.Entry, stage, action string, step int) item {
	tool, _ := d.Context["tool"].(string)
	it := item{step: step, id: d.RecordID, kind: d.Kind, tool: tool, stage: stage, out: outcome{d.Outcome, d.Code}}
	if stage == stageCall || action == "" {
		it.key = fmt.Sprintf("%s@%d", stage, step)
	} else {
		it.key = stage + "@" + action
	}
	return it
}

// call replays the call d records: the tool, arguments, caller, intent,
// call id and compiled context it names, through the gate of its policy.
func (r *replayer) call(ctx context.Context, d audit.Entry) error {
	str := func(k string) string { s, _ := d.Context[k].(string); return s }
	c := toolgate.Call{ID: str("call_id"), RetryKey: str("retry_key"), Tool: str("tool"), Caller: str("caller"),
		TraceID: r.trace, Intent: str("intent")}
	if args, ok := d.Context["args"]; ok {
		raw, err := json.Marshal(args)
		if err != nil {
			return err
		}
		c.Args = raw
	} else if raw, ok := d.Context["args_raw"].(string); ok {
		c.Args = json.RawMessage(raw)
	} else {
		r.note("%s: the record holds no arguments of the call (refused before they parsed); replayed without them", d.RecordID)
	}
	if id := str("context"); id != "" {
		if m, ok := r.ids[id]; ok {
			c.Context = m
		} else {
			c.Context = id
			r.note("%s: the compiled context %s it names is not in the trace", d.RecordID, id)
		}
	}
	if ts, ok := r.callers[d.Subject]; ok {
		r.nowMS = ts // the call's time, not its decision's
	} else if ts, ok := r.called[d.Subject]; ok {
		r.nowMS = ts
	}
	g := r.gateOf(d)
	src := ""
	if d.Outcome != audit.OutcomeRefused {
		src = d.Subject
	}
	r.stepAction, r.current = src, src
	res, err := g.Call(ctx, c)
	if err != nil {
		return err
	}
	if res.ActionID != "" {
		r.back[res.ActionID] = src
		if src != "" {
			r.actions[src], r.actionGate[src] = res.ActionID, g
		}
	}
	return nil
}

func (r *replayer) gateOf(d audit.Entry) *toolgate.Gate {
	if h, _ := d.Context["policy"].(string); r.gates[h] != nil {
		return r.gates[h]
	}
	return r.gates[r.hashes[0]]
}

// execute runs a committed action again when the record shows it run
// after its call (after an approval, or by a recovery).
func (r *replayer) execute(ctx context.Context, src string) error {
	r.stepAction, r.current = src, src
	act, ok := r.actions[src]
	if !ok {
		return nil // the replay did not commit it: its recorded decisions show as missing
	}
	if _, err := r.actionGate[src].Execute(ctx, act); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.note("%s: the replay could not run %s again: %v", src, act, err)
	}
	return nil
}

// approval records a recorded approval or denial for the replayed
// action, with the recorded approver, digest, note and expiry.
func (r *replayer) approval(ctx context.Context, rec blackboard.Record) error {
	a, ok := audit.ApprovalOf(rec)
	if !ok {
		return nil
	}
	// What runs the action after the decision is a step of its own, even
	// right after its call.
	r.stepAction = ""
	act, ok := r.actions[a.ActionID]
	if !ok {
		r.note("%s: the replay did not commit %s, so its %s decision has nothing to apply to", rec.ID, a.ActionID, a.Decision)
		return nil
	}
	ap := r.actionGate[a.ActionID].Approver(a.Approver)
	ans := audit.Approval{TraceID: r.trace, ActionID: act, Digest: a.Digest, Decision: a.Decision, Note: a.Note, TTL: a.TTL}
	if _, err := ap.Decide(ctx, ans); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.note("%s: the replay could not record the %s decision: %v", rec.ID, a.Decision, err)
	}
	return nil
}

// restrict records the trace's run controls as they were recorded.
func (r *replayer) restrict(ctx context.Context, rec blackboard.Record) error {
	mode, _ := rec.Payload["mode"].(string)
	prohibited, _ := rec.Payload.Strings("prohibited")
	g := r.gates[r.hashes[0]]
	if h, _ := rec.Payload["policy"].(string); r.gates[h] != nil {
		g = r.gates[h]
	}
	if err := g.Restrict(ctx, r.trace, toolgate.Controls{ReadOnly: mode == "read_only", Prohibited: prohibited}); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.note("%s: the replay could not record the run controls: %v", rec.ID, err)
	}
	return nil
}

// request records the trace's request as it was recorded: the principal
// and the resources the scoped tools' arguments must lie within.
func (r *replayer) request(ctx context.Context, rec blackboard.Record) error {
	principal, _ := rec.Payload["principal"].(string)
	req := audit.Request{Principal: principal}
	res, _ := rec.Payload["resources"].(map[string]any)
	for typ := range res {
		ids, _ := blackboard.Payload(res).Strings(typ)
		if req.Resources == nil {
			req.Resources = map[string][]string{}
		}
		req.Resources[typ] = ids
	}
	g := r.gates[r.hashes[0]]
	if h, _ := rec.Payload["policy"].(string); r.gates[h] != nil {
		g = r.gates[h]
	}
	if err := g.RecordRequest(ctx, r.trace, req); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.note("%s: the replay could not record the request: %v", rec.ID, err)
	}
	return nil
}

// entry is rec as a kernel entry of the replayed trace.
func (r *replayer) entry(ctx context.Context, rec blackboard.Record) kernel.Entry {
	p := rec.Provenance
	return kernel.Entry{TraceID: r.trace, Slot: rec.Slot, Kind: rec.Kind, Payload: rec.Payload.Clone(),
		InputRefs: r.refs(ctx, rec.ID, p.InputRefs), EvidenceRefs: r.refs(ctx, rec.ID, rec.EvidenceRefs), Confidence: p.Confidence,
		TTL: time.Duration(p.TTLMS) * time.Millisecond, Scope: rec.Scope}
}

// write copies an observation, a constraint or an evidence artifact with
// its writer's handle.
func (r *replayer) write(ctx context.Context, rec blackboard.Record, w func(context.Context, kernel.Entry) (string, error)) error {
	id, err := w(ctx, r.entry(ctx, rec))
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.note("%s: the replay could not write it again: %v", rec.ID, err)
		return nil
	}
	r.ids[rec.ID] = id
	return nil
}

// propose submits a planner's (or simulator's) proposal again and pairs
// the kernel's decision with the recorded one.
func (r *replayer) propose(ctx context.Context, rec blackboard.Record) error {
	rec0 := item{step: r.step, id: rec.ID, kind: rec.Kind, stage: stagePropose}
	if c, ok := r.commits[rec.ID]; ok {
		rec0.out = outcome{audit.OutcomeCommitted, c.Reason}
	} else if rec.Reason != "" {
		rec0.out = outcome{audit.OutcomeRefused, rec.Reason}
	} else {
		r.note("%s: the kernel never decided it; not replayed", rec.ID)
		return nil
	}
	var d kernel.Decision
	var err error
	if rec.Provenance.Role == blackboard.RoleSimulator {
		d, err = r.k.Proposer(blackboard.RoleSimulator, rec.Provenance.Writer).Submit(ctx, r.entry(ctx, rec))
	} else {
		d, err = r.k.Proposer(blackboard.RolePlanner, rec.Provenance.Writer).Submit(ctx, r.entry(ctx, rec))
	}
	rep := &item{step: r.step, kind: rec.Kind, stage: stagePropose}
	switch {
	case err != nil && ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		r.note("%s: the replay could not submit it: %v", rec.ID, err)
		rep = nil
	case d.CommittedID != "":
		rep.id, rep.out = d.CommittedID, outcome{audit.OutcomeCommitted, d.Code}
		r.ids[rec.ID] = d.ProposalID
		if c, ok := r.commits[rec.ID]; ok {
			r.ids[c.ID] = d.CommittedID
		}
	default:
		rep.id, rep.out = d.ProposalID, outcome{audit.OutcomeRefused, d.Code}
		r.ids[rec.ID] = d.ProposalID
	}
	rec0.pair = rep
	r.proposed = append(r.proposed, rec0)
	return nil
}

// refs maps the source ids refs names to their replayed counterparts: a
// record the replay copied or an action it committed, else, for a record
// the kernel or the gate wrote (a committed belief, a tool's result), the
// replayed trace's current record of the same slot and kind, which is
// what stood in its place when the reference was made. One without any
// is dropped, and said so.
func (r *replayer) refs(ctx context.Context, of string, refs []string) []string {
	var out []string
	for _, ref := range refs {
		if m, ok := r.ids[ref]; ok {
			out = append(out, m)
			continue
		}
		if m, ok := r.actions[ref]; ok {
			out = append(out, m)
			continue
		}
		if rec, err := r.src.Get(ctx, ref); err == nil && rec.Provenance.TraceID == r.trace {
			if cur, err := r.k.Handle(blackboard.RoleTool, "replay").Find(ctx, r.trace, rec.Slot, rec.Kind); err == nil {
				out = append(out, cur.ID)
				continue
			}
		}
		r.note("%s: its reference to %s has no replayed counterpart and is left out", of, ref)
	}
	return out
}

func quote(s string) string { return fmt.Sprintf("%q", s) }
