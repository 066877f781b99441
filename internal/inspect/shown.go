package inspect

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/canon"
	"github.com/blackboardkernel/bk/internal/packrec"
	"github.com/blackboardkernel/bk/pack"
)

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
	Context Context `json:"context"`
}

// Context is a compiled context as its record holds it ([pack.Pack.Record]):
// the pack's fields, each section's share of the window, and the
// manifests of the policy, tools, evidence, memory and run controls
// shown and of every cut.
type Context struct {
	Hash     string            `json:"hash,omitempty"`
	Encoding string            `json:"encoding"`
	Window   int               `json:"window"`
	Tokens   int               `json:"tokens"`
	Mode     string            `json:"mode"`
	Intent   string            `json:"intent,omitempty"`
	Role     string            `json:"role,omitempty"`
	Policy   string            `json:"policy,omitempty"`
	Prompt   string            `json:"prompt"`
	Sections []packrec.Section `json:"sections"`
	Manifest Manifest          `json:"manifest"`
}

// Manifest is a compiled context's manifests, as its record holds them.
type Manifest struct {
	Policy   pack.PolicySummary `json:"policy"`
	Tools    []string           `json:"tools"`
	Evidence []packrec.Evidence `json:"evidence"`
	Memory   []packrec.Memory   `json:"memory"`
	Controls packrec.Controls   `json:"controls"`
	Cuts     []packrec.Cut      `json:"cuts"`
}

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
	if sh.Invalid = notRecorded(r); sh.Invalid != "" {
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
	sh.Verified = verified(r, sh.Context.Hash)
	return sh
}

// notRecorded says why r, a record a decision record names as the
// compiled context of its call, is not one the kernel recorded in the
// trace; "" when it is. The mutation switch mutShown takes any record of
// the trace.
func notRecorded(r *blackboard.Record) string {
	if mutShown && r != nil {
		return ""
	}
	return recordedFault(r)
}

func recordedFault(r *blackboard.Record) string {
	switch {
	case r == nil:
		return "no record of this trace"
	case r.Slot != blackboard.Evidence || r.Kind != audit.KindCompiledContext:
		return "a " + string(r.Slot) + " record of kind " + r.Kind + ", not a compiled context"
	case r.Provenance.Role != blackboard.RoleKernel:
		return "not written by the kernel"
	}
	return ""
}

// verified reports whether the compiled context r holds, but its hash,
// hashes to hash: what is shown is what was hashed. The mutation switch
// mutShown takes every context as verified.
func verified(r *blackboard.Record, hash string) bool {
	if mutShown {
		return true
	}
	return hashes(r, hash)
}

func hashes(r *blackboard.Record, hash string) bool {
	rest := make(map[string]any, len(r.Payload))
	for k, v := range r.Payload {
		if k != "hash" {
			rest[k] = v
		}
	}
	h, err := canon.Digest(rest)
	return err == nil && h == hash
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
	fmt.Fprintf(sb, "\n  compiled context %s (%s), %d of %d tokens (%s), mode %s", Inert(c.Hash), verified, c.Tokens, c.Window, Inert(c.Encoding), Inert(c.Mode))
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
