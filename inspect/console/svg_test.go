package console

import (
	"encoding/xml"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/inspect"
)

// element is an SVG element as the tests read it back.
type element struct {
	name  string
	attrs map[string]string
	text  string // character data directly inside it
}

// parseSVG reads s as XML, failing the test when it is not well formed,
// and returns its elements in document order.
func parseSVG(t *testing.T, s string) []*element {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(s))
	var out, stack []*element
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed SVG: %v\n%s", err, s)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			e := &element{name: tok.Name.Local, attrs: map[string]string{}}
			for _, a := range tok.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			out, stack = append(out, e), append(stack, e)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text += string(tok)
			}
		}
	}
	return out
}

// hostileTool is a tool name a model could send: markup that would run,
// and a terminal escape that would clear the screen.
const hostileTool = "<script>alert(1)</script>\x1b[2J"

// story is a refund's trace: observed, a belief refused for stale
// evidence then committed, the refund committed, waiting, approved,
// attempted and paid; and a call of a tool with a hostile name that a
// binding refused.
func story() inspect.TimelineReport {
	return inspect.TimelineReport{TraceID: "T<1>", Outcome: "issue_refund executed", Events: []inspect.TimelineEvent{
		{Type: inspect.EventObservation, Slot: blackboard.Percepts, Text: "percept.order committed (stale=true)"},
		{Type: inspect.EventProposal, Slot: blackboard.Beliefs, Text: "belief.refund_due proposed"},
		{Type: inspect.EventRefusal, Slot: blackboard.Beliefs, Code: "STALE_EVIDENCE", Text: "evidence validation: STALE_EVIDENCE -- belief rejected"},
		{Type: inspect.EventDecision, Slot: blackboard.Evidence, Code: "STALE_EVIDENCE", Text: "decision: refund_due refused (STALE_EVIDENCE)"},
		{Type: inspect.EventCommit, Slot: blackboard.Beliefs, Text: "belief.refund_due committed"},
		{Type: inspect.EventCommit, Slot: blackboard.Plans, Text: "plan.refund proposed -- feasible"},
		{Type: inspect.EventCommit, Slot: blackboard.Actions, Text: "action.issue_refund committed"},
		{Type: inspect.EventDecision, Slot: blackboard.Evidence, Code: "APPROVAL_REQUIRED", Text: "decision: issue_refund pending_approval (APPROVAL_REQUIRED)"},
		{Type: inspect.EventApproval, Slot: blackboard.Evidence, Text: "approval: approved by human:alice", Detail: "for actions:T1:7"},
		{Type: inspect.EventEffect, Slot: blackboard.Percepts, Text: "effect.issue_refund attempted (attempt 1)"},
		{Type: inspect.EventEffect, Slot: blackboard.Percepts, Text: "effect.issue_refund succeeded (attempt 1) -> percept.refund"},
		{Type: inspect.EventDecision, Slot: blackboard.Evidence, Code: "ARGUMENT_NOT_BOUND", Text: "decision: " + hostileTool + " refused (ARGUMENT_NOT_BOUND)", Detail: "reason </text><script>x</script>"},
	}}
}

// TestTimelineSVG: the picture has a node per event that matters, in its
// lane and in order (observation → belief → plan → action → approval →
// attempt → result), an arrow between each node and the next, refusals in
// their own colour with their codes, and is well-formed XML.
func TestTimelineSVG(t *testing.T) {
	els := parseSVG(t, string(timelineSVG(story())))
	if els[0].name != "svg" || els[0].attrs["viewBox"] == "" {
		t.Fatalf("root %+v", els[0])
	}
	var lanesSeen, refusals []string
	var nodeCount, edges int
	for i, e := range els {
		switch {
		case e.name == "g" && strings.HasPrefix(e.attrs["class"], "node"):
			nodeCount++
			lanesSeen = append(lanesSeen, e.attrs["data-lane"])
			circle, label := els[i+2], els[i+3] // after the node's title
			if circle.name != "circle" || label.name != "text" {
				t.Fatalf("node %d: %s, %s", nodeCount, circle.name, label.name)
			}
			if refused := e.attrs["class"] == "node refusal"; refused {
				refusals = append(refusals, label.text)
				if circle.attrs["fill"] != refusalColour || label.attrs["fill"] != refusalColour {
					t.Errorf("refusal %q not in the refusal colour: %v", label.text, circle.attrs)
				}
			} else if circle.attrs["fill"] == refusalColour {
				t.Errorf("%q drawn as a refusal", label.text)
			}
		case e.name == "line" && e.attrs["class"] == "edge":
			edges++
			if e.attrs["marker-end"] != "url(#arrow)" {
				t.Errorf("edge without an arrow: %v", e.attrs)
			}
		}
	}
	want := []string{"observation", "belief", "belief", "belief", "plan", "action", "approval", "approval", "attempt", "result", "action"}
	if !slices.Equal(lanesSeen, want) {
		t.Errorf("lanes %q, want %q", lanesSeen, want)
	}
	if edges != nodeCount-1 {
		t.Errorf("%d edges between %d nodes", edges, nodeCount)
	}
	if len(refusals) != 2 || !strings.Contains(refusals[0], "STALE_EVIDENCE") || !strings.Contains(refusals[1], "ARGUMENT_NOT_BOUND") {
		t.Errorf("refusals %q, want STALE_EVIDENCE (once: its decision record repeats it) and ARGUMENT_NOT_BOUND", refusals)
	}
}

// TestAttackTimelineSVGMarkup: stored text holding markup and terminal
// escapes (a tool name, a refusal's reason, the trace id) is drawn as
// text: the picture holds no element but its own, and the escape reads
// as \x1b.
func TestAttackTimelineSVGMarkup(t *testing.T) {
	s := string(timelineSVG(story()))
	els := parseSVG(t, s)
	own := []string{"svg", "title", "defs", "marker", "path", "text", "line", "g", "circle"}
	shown := false
	for _, e := range els {
		if !slices.Contains(own, e.name) {
			t.Errorf("stored text became a <%s> element", e.name)
		}
		shown = shown || strings.Contains(e.text, `<script>alert(1)</script>\x1b[2J`)
	}
	if !shown {
		t.Errorf("the hostile tool name is not shown as text:\n%s", s)
	}
	if strings.Contains(s, "\x1b") || strings.Contains(s, "<script") {
		t.Errorf("raw markup or escape in the picture:\n%s", s)
	}
}

// TestTimelineSVGEmpty: a timeline with no event to draw is still a
// picture, saying so.
func TestTimelineSVGEmpty(t *testing.T) {
	els := parseSVG(t, string(timelineSVG(inspect.TimelineReport{TraceID: "T"})))
	if !slices.ContainsFunc(els, func(e *element) bool { return e.text == "no events" }) {
		t.Error("an empty timeline's picture does not say it has no events")
	}
}
