package pack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/canon"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/store"
)

// item is one unit of a section: a line (or a block) of the prompt, whose
// tokens are counted on their own. Every unit starts with a character that
// is not a space and ends with one newline, so that the BPE pre-tokenizer
// never joins two units: the prompt's count is the sum of its units'.
type item struct {
	key    string // what a cut names
	text   string
	tokens int
	// rank orders cuts: the lowest is cut first; on a tie, the later item.
	rank     int
	tool     string
	evidence []evidenceItem
	memory   *memoryItem
	stamp    int64 // when the record shown was written, for ordering
	step     *Step // a progress item's step, for the summary
}

// section is one section while it is compiled.
type section struct {
	name         string
	share        float64
	header       string
	headerTokens int
	fixed        bool // never cut: the mission, the constraints
	text         bool // one text that may be shortened: the task, the last result
	items        []item
	kept         []item
	pre          []sectionCut // cuts made before allocation (prohibited tools)
	cuts         []sectionCut
	budget       int
}

func (s *section) need() int  { return total(s.headerTokens, s.items) }
func (s *section) taken() int { return total(s.headerTokens, s.kept) }

func total(header int, items []item) int {
	if len(items) == 0 {
		return 0
	}
	t := header
	for i := range items {
		t += items[i].tokens
	}
	return t
}

// unit makes s one prompt unit: trimmed, with one final newline.
func unit(s string) string { return strings.TrimSpace(s) + "\n" }

// sections builds every section, with its items counted.
func (c *Compiler) sections(ctx context.Context, rd kernel.Reader, run Run, in Input, now time.Time) ([]*section, error) {
	heads := map[string]string{
		sectionSignals: "## Critical signals", sectionMission: "## Mission", sectionConstraints: "## Constraints",
		sectionPolicy: "## Policy", sectionProgress: "## Progress", sectionEvidence: "## Evidence",
		sectionMemory: "## Memory", sectionTask: "## Current task", sectionLastResult: "## Last result",
		sectionTools: "## Tools", sectionControls: "## Run controls",
	}
	secs := make([]*section, 0, len(heads))
	byName := make(map[string]*section, len(heads))
	for _, name := range sectionNames() {
		s := &section{name: name, share: c.shares[name], header: unit(heads[name])}
		s.fixed = name == sectionMission || name == sectionConstraints
		s.text = name == sectionTask || name == sectionLastResult
		secs = append(secs, s)
		byName[name] = s
	}
	add := func(name, key, text string, rank int) *item {
		s := byName[name]
		s.items = append(s.items, item{key: key, text: unit(text), rank: rank})
		return &s.items[len(s.items)-1]
	}
	for i, sig := range in.Signals {
		add(sectionSignals, "signal "+strconv.Itoa(i+1), "- "+sig, -i)
	}
	add(sectionMission, sectionMission, in.Mission, 0)
	for i, con := range in.Constraints {
		add(sectionConstraints, "constraint "+strconv.Itoa(i+1), "- "+con, -i)
	}
	policyItems(in.Policy, func(key, text string) {
		s := byName[sectionPolicy]
		add(sectionPolicy, key, text, -len(s.items))
	})
	steps := slices.Clone(in.Progress)
	slices.SortStableFunc(steps, func(a, b Step) int { return a.Turn - b.Turn })
	for i, st := range steps {
		add(sectionProgress, "turn "+strconv.Itoa(st.Turn), stepLine(st), i).step = &steps[i]
	}
	nowMS := now.UnixMilli()
	if err := c.evidence(ctx, rd, run.TraceID, nowMS, byName[sectionEvidence]); err != nil {
		return nil, err
	}
	if err := c.memory(ctx, rd, nowMS, byName[sectionMemory]); err != nil {
		return nil, err
	}
	if strings.TrimSpace(in.Task) != "" {
		add(sectionTask, sectionTask, in.Task, 0)
	}
	if strings.TrimSpace(in.LastResult) != "" {
		add(sectionLastResult, sectionLastResult, in.LastResult, 0)
	}
	tools := byName[sectionTools]
	for i, sp := range in.Tools {
		if prohibitedDropped() && slices.Contains(in.Policy.Prohibited, sp.Name) {
			tools.pre = append(tools.pre, sectionCut{Section: sectionTools, Item: sp.Name, Reason: reasonProhibited})
			continue
		}
		it := add(sectionTools, sp.Name, toolLine(sp.Name, sp.Description, sp.Parameters), -i)
		it.tool = sp.Name
	}
	for i, line := range controlLines(run, controls(run, in)) {
		add(sectionControls, "control "+strconv.Itoa(i+1), line, -i)
	}
	for _, s := range secs {
		n, err := c.tok.count(s.header)
		if err != nil {
			return nil, err
		}
		s.headerTokens = n
		for i := range s.items {
			if s.items[i].tokens, err = c.tok.count(s.items[i].text); err != nil {
				return nil, err
			}
		}
	}
	return secs, nil
}

func policyItems(p PolicySummary, add func(key, text string)) {
	for i, r := range p.Rules {
		add("rule "+strconv.Itoa(i+1), "- rule: "+r)
	}
	for _, t := range p.MustRefuse {
		add("must refuse: "+t, "- must refuse: "+t)
	}
	for _, t := range p.MustEscalate {
		add("must escalate: "+t, "- must escalate: "+t)
	}
	if len(p.Approval) > 0 {
		add("approval", "- needs an approval before it runs: "+strings.Join(sortedCopy(p.Approval), ", "))
	}
	if len(p.Prohibited) > 0 {
		add("prohibited", "- prohibited (refused if called): "+strings.Join(sortedCopy(p.Prohibited), ", "))
	}
}

func stepLine(s Step) string {
	var b strings.Builder
	fmt.Fprintf(&b, "- turn %d:", s.Turn)
	if s.Tool != "" {
		b.WriteString(" " + s.Tool)
	}
	if s.OK {
		b.WriteString(" ok")
	} else {
		b.WriteString(" failed")
	}
	if s.Note != "" {
		b.WriteString(": " + s.Note)
	}
	return b.String()
}

func toolLine(name, desc string, params json.RawMessage) string {
	line := "- " + name
	if d := strings.TrimSpace(desc); d != "" {
		line += ": " + d
	}
	if len(params) > 0 {
		var b bytes.Buffer
		if json.Compact(&b, params) == nil {
			line += " parameters: " + b.String()
		}
	}
	return line
}

func controlLines(run Run, ctl runControls) []string {
	mode := "- safety mode: " + ctl.Mode
	if ctl.Mode == modeReadOnly {
		mode += " (tools with effects are neither shown nor run)"
	}
	lines := []string{mode}
	var who []string
	for _, kv := range [][2]string{{"run", run.ID}, {"trace", run.TraceID}, {"session", run.Session},
		{"namespace", run.Namespace}, {"role", run.Role}, {"intent", run.Intent}} {
		if kv[1] != "" {
			who = append(who, kv[0]+" "+kv[1])
		}
	}
	lines = append(lines, "- "+strings.Join(who, ", "))
	if len(ctl.Budgets) > 0 {
		parts := make([]string, len(ctl.Budgets))
		for i, l := range ctl.Budgets {
			parts[i] = l.Resource + " " + strconv.FormatFloat(l.Left, 'f', -1, 64)
		}
		lines = append(lines, "- budget left: "+strings.Join(parts, ", "))
	}
	if len(ctl.Approval) > 0 {
		lines = append(lines, "- approval tier: "+strings.Join(sortedCopy(ctl.Approval), ", ")+" wait for an approver")
	}
	return lines
}

// evidence adds, one item per belief, the trace's committed, active
// beliefs (the latest of each kind, as its view shows them) and the
// percepts each rests on, newest belief first. It reads the view and, by
// id, each belief and the records it names: its cost does not grow with
// the trace's length.
func (c *Compiler) evidence(ctx context.Context, rd kernel.Reader, traceID string, nowMS int64, s *section) error {
	v, err := rd.View(ctx, traceID, false)
	if err != nil {
		return err
	}
	kinds := slices.Sorted(maps.Keys(v.Committed[blackboard.Beliefs]))
	perceptPrefix := string(blackboard.Percepts) + ":"
	for _, kind := range kinds {
		id, ok := v.ID(blackboard.Beliefs, kind)
		if !ok {
			continue
		}
		b, err := rd.Get(ctx, id)
		if err != nil {
			return err
		}
		be := entry(&b, nowMS)
		be.Refs = slices.Clone(b.EvidenceRefs)
		group := []evidenceItem{be}
		var lines []string
		for _, ref := range refs(b.Provenance.InputRefs, b.EvidenceRefs) {
			if !strings.HasPrefix(ref, perceptPrefix) {
				continue
			}
			p, err := rd.Get(ctx, ref)
			if errors.Is(err, blackboard.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			pe := entry(&p, nowMS)
			pe.Belief = b.ID
			// The view shows the current observation of each kind (none
			// once it has expired, which entry flags stale).
			if cur, ok := v.ID(blackboard.Percepts, p.Kind); ok && cur != p.ID && flagsChecked() {
				pe.Flags = addFlag(pe.Flags, flagSuperseded)
			}
			for _, f := range pe.Flags {
				if f != flagLowConfidence {
					group[0].Flags = addFlag(group[0].Flags, f)
				}
			}
			if slices.Contains(group[0].Flags, flagStale) {
				group[0].Freshness = freshnessStale
			}
			group = append(group, pe)
			lines = append(lines, "  "+recordLine("percept", &p, pe, "observed "+fmtAge(pe.AgeMS)+" ago"))
		}
		slices.Sort(group[0].Flags)
		text := recordLine("belief", &b, group[0], fmtAge(group[0].AgeMS)+" old")
		if len(lines) > 0 {
			text += "\n" + strings.Join(lines, "\n")
		}
		s.items = append(s.items, item{key: b.ID, text: unit(text), evidence: group, stamp: b.Provenance.TimestampMS})
	}
	rankByRecency(s.items)
	return nil
}

// refs lists a and then the entries of b not in a.
func refs(a, b []string) []string {
	out := slices.Clone(a)
	for _, r := range b {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// rankByRecency orders items newest first (then the later record first) and ranks them so
// that the least recent is cut first.
func rankByRecency(items []item) {
	slices.SortStableFunc(items, func(a, b item) int {
		if a.stamp != b.stamp {
			if a.stamp > b.stamp {
				return -1
			}
			return 1
		}
		_, _, ai, _ := store.SplitRecordID(a.key)
		_, _, bi, _ := store.SplitRecordID(b.key)
		if ai != bi {
			return bi - ai
		}
		return strings.Compare(a.key, b.key)
	})
	for i := range items {
		items[i].rank = -i
	}
}

// entry is the manifest entry of a record shown as evidence, with the
// flags its own status, TTL and payload give it.
func entry(r *blackboard.Record, nowMS int64) evidenceItem {
	e := evidenceItem{ID: r.ID, Slot: string(r.Slot), Kind: r.Kind, AgeMS: nowMS - r.Provenance.TimestampMS,
		TTLMS: r.Provenance.TTLMS, Freshness: freshnessFresh}
	if !flagsChecked() {
		return e
	}
	if r.Status == blackboard.StatusExpired || r.ExpiredAt(nowMS) || r.Payload.Bool("stale") {
		e.Flags = addFlag(e.Flags, flagStale)
	}
	if r.Status == blackboard.StatusInvalidated {
		e.Flags = addFlag(e.Flags, flagInvalidated)
	}
	if r.Payload.Bool("conflict") {
		e.Flags = addFlag(e.Flags, flagConflicted)
	}
	if r.Payload.Bool("low_confidence") {
		e.Flags = addFlag(e.Flags, flagLowConfidence)
	}
	if slices.Contains(e.Flags, flagStale) {
		e.Freshness = freshnessStale
	}
	return e
}

func addFlag(flags []string, f string) []string {
	if slices.Contains(flags, f) {
		return flags
	}
	return append(flags, f)
}

// recordLine shows one record: flagged, it starts with its flags in
// capitals and ends saying it is not a current fact.
func recordLine(what string, r *blackboard.Record, e evidenceItem, age string) string {
	var b strings.Builder
	b.WriteString("- ")
	if len(e.Flags) > 0 {
		fl := slices.Clone(e.Flags)
		slices.Sort(fl)
		b.WriteString(strings.ToUpper(strings.Join(fl, ", ")) + ": ")
	}
	fmt.Fprintf(&b, "%s %s = %s (%s; %s", what, r.Kind, payloadText(r.Payload), r.ID, age)
	if e.TTLMS > 0 && len(e.Flags) == 0 {
		b.WriteString("; fresh for " + fmtAge(e.TTLMS-e.AgeMS))
	}
	b.WriteString(")")
	if len(e.Flags) > 0 {
		b.WriteString(": not a current fact")
	}
	return b.String()
}

// payloadText is the canonical JSON of a payload: the same payload reads
// the same in every compile.
func payloadText(p blackboard.Payload) string {
	b, err := canon.Encode(map[string]any(p))
	if err != nil {
		return "(payload without a canonical form)"
	}
	return string(b)
}

// memory adds the namespace's committed, active, persistent records, one
// item each, newest first. Their number is bounded by what the namespace
// promoted, not by any trace's length.
func (c *Compiler) memory(ctx context.Context, rd kernel.Reader, nowMS int64, s *section) error {
	for _, slot := range blackboard.AllSlots() {
		for r, err := range rd.List(ctx, slot, store.Filter{Status: blackboard.StatusActive, Scope: blackboard.ScopePersistent}) {
			if err != nil {
				return err
			}
			if r.Mode != blackboard.ModeCommit || r.ExpiredAt(nowMS) {
				continue
			}
			m := &memoryItem{ID: r.ID, Slot: string(slot), Kind: r.Kind, AgeMS: nowMS - r.Provenance.TimestampMS}
			text := fmt.Sprintf("- %s %s = %s (%s; %s old)", m.Slot, r.Kind, payloadText(r.Payload), r.ID, fmtAge(m.AgeMS))
			s.items = append(s.items, item{key: r.ID, text: unit(text), memory: m, stamp: r.Provenance.TimestampMS})
		}
	}
	rankByRecency(s.items)
	return nil
}

// prohibitedDropped reports whether a prohibited tool is left out of the
// tools shown (off only under its mutation switch).
func prohibitedDropped() bool {
	return !mutProhibited
}

// flagsChecked reports whether evidence is flagged stale, superseded or
// conflicted as its record says (off only under its mutation switch).
func flagsChecked() bool {
	return !mutFlags
}
