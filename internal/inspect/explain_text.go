package inspect

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/kernelhook"
	"github.com/blackboardkernel/bk/reason"
)

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
	case r.Slot == blackboard.Evidence && r.Kind == kernelhook.KindBeliefValidation:
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
		e, _ := audit.EffectOf(*r)
		if e.Status == audit.StatusSucceeded {
			return perceptSummary(r) + " from effect." + e.Tool + " (attempt " + strconv.Itoa(e.Attempt) + ")"
		}
		return effectText(e)
	case r.Slot == blackboard.Percepts:
		return perceptSummary(r)
	case r.Mode == blackboard.ModePropose:
		s := name + " proposed by " + r.Provenance.Writer
		switch {
		case r.Reason == reason.SupersededByCommit:
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
		if why, ok := r.Payload["reason"].(string); ok && r.Slot == blackboard.Actions && x.fallbacks[r.Kind] {
			s += " reason=" + why
		}
		if r.Slot == blackboard.Beliefs {
			s += " value=" + strconv.FormatBool(r.Payload.Bool("value"))
		}
		return s
	}
	return name + " written by " + r.Provenance.Writer + " (" + string(r.Provenance.Role) + ")"
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
		parts = append(parts, string(r.Status))
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
	if e.Receipt != "" {
		sb.WriteString("receipt: " + Inert(e.Receipt) + "\n")
	}
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
