package console

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"html/template"
	"strings"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/inspect"
)

// lanes are the timeline picture's columns, in the order a tool call
// travels them.
var lanes = []string{"observation", "belief", "plan", "action", "approval", "attempt", "result"}

// The picture's colours: a refusal has its own, so that it stands out
// from everything that went through.
const (
	refusalColour = "#c0392b"
	nodeColour    = "#2c6fbb"
	edgeColour    = "#999999"
)

// The picture's geometry, in SVG user units (CSS pixels at scale 1).
const (
	laneW   = 84
	rowH    = 22
	padTop  = 34
	padLeft = 10
	textX   = padLeft + 7*laneW + 14
	width   = textX + 600
	maxText = 80 // runes of an event's line the picture shows; the title holds it whole
)

// node is one event of the picture.
type node struct {
	lane    int
	refusal bool
	line    string // the event's line, with its code
	typ     inspect.EventType
}

// nodes picks and places the events of a timeline: each in its lane, a
// refusal marked with its code. Decision records repeat what the kernel's
// events say and are left out, but for a refusal that left no other
// event (a contract's, a binding's) and an action waiting for approval.
func nodes(tl inspect.TimelineReport) []node {
	var out []node
	prevRefusal := false
	for _, e := range tl.Events {
		n := node{lane: -1, typ: e.Type, line: e.Line()}
		switch e.Type {
		case inspect.EventObservation, inspect.EventConstraint:
			n.lane = 0
		case inspect.EventValidation, inspect.EventArbitration, inspect.EventArtifact:
			n.lane = 1
		case inspect.EventApproval:
			n.lane = 4
		case inspect.EventEffect:
			n.lane = 6
			if strings.Contains(e.Text, " "+audit.StatusAttempted) {
				n.lane = 5
			}
			n.refusal = strings.Contains(e.Text, " "+audit.StatusRefused)
		case inspect.EventDecision:
			switch {
			case decided(e, audit.OutcomeRefused) && !prevRefusal:
				n.lane, n.refusal = 3, true
			case decided(e, audit.OutcomePendingApproval):
				n.lane = 4
			}
		default:
			n.lane = slotLane(e.Slot)
			n.refusal = e.Type == inspect.EventRefusal
		}
		if n.lane < 0 {
			continue
		}
		prevRefusal = n.refusal
		if n.refusal && e.Code != "" && !strings.Contains(n.line, string(e.Code)) {
			n.line += " [" + string(e.Code) + "]"
		}
		out = append(out, n)
	}
	return out
}

// decided reports whether e is a decision record of outcome o, as the
// timeline writes one: "decision: KIND OUTCOME (CODE)".
func decided(e inspect.TimelineEvent, o audit.Outcome) bool {
	return strings.HasSuffix(e.Text, " "+string(o)+" ("+string(e.Code)+")")
}

// slotLane is the lane of a record of slot s.
func slotLane(s blackboard.Slot) int {
	switch s {
	case blackboard.Percepts, blackboard.Constraints:
		return 0
	case blackboard.Beliefs, blackboard.Evidence:
		return 1
	case blackboard.Plans:
		return 2
	case blackboard.Actions:
		return 3
	}
	return 0
}

// timelineSVG draws a trace's timeline as an SVG picture, to be inlined in
// the trace page: a column per lane (observation … result), a row per
// event in order, each event a dot in its lane joined to the one before by
// an arrow, its line beside it, a refusal in its own colour with its code.
// Every stored text passes through [inspect.Inert] and is XML-escaped
// here, so the result is safe to inline as it is: it holds no script, and
// the console's content security policy would not run one.
func timelineSVG(tl inspect.TimelineReport) template.HTML {
	ns := nodes(tl)
	height := padTop + rowH*max(len(ns), 1) + 8
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="timeline" role="img" width="%d" height="%d" viewBox="0 0 %d %d" font-family="monospace" font-size="12">`, width, height, width, height)
	b.WriteString(`<title>`)
	text(&b, "timeline of trace "+tl.TraceID+": "+tl.Outcome)
	b.WriteString(`</title>`)
	fmt.Fprintf(&b, `<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" fill="%s"/></marker></defs>`, edgeColour)
	for i, l := range lanes {
		x := padLeft + i*laneW + laneW/2
		fmt.Fprintf(&b, `<text class="lane" x="%d" y="16" text-anchor="middle" font-weight="bold">%s</text>`, x, l)
		fmt.Fprintf(&b, `<line x1="%d" y1="24" x2="%d" y2="%d" stroke="#e4e4e4"/>`, x, x, height-4)
	}
	at := func(i int) (int, int) { return padLeft + ns[i].lane*laneW + laneW/2, padTop + i*rowH + rowH/2 }
	for i := 1; i < len(ns); i++ {
		x1, y1 := at(i - 1)
		x2, y2 := at(i)
		fmt.Fprintf(&b, `<line class="edge" x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" marker-end="url(#arrow)"/>`, x1, y1+5, x2, y2-6, edgeColour)
	}
	for i, n := range ns {
		x, y := at(i)
		class, colour := "node", nodeColour
		if n.refusal {
			class, colour = "node refusal", refusalColour
		}
		fmt.Fprintf(&b, `<g class="%s" data-lane="%s" data-type="%s"><title>`, class, lanes[n.lane], n.typ)
		text(&b, n.line)
		fmt.Fprintf(&b, `</title><circle cx="%d" cy="%d" r="5" fill="%s"/><text x="%d" y="%d" fill="%s">`, x, y, colour, textX, y+4, colour)
		text(&b, clip(n.line, maxText))
		b.WriteString(`</text></g>`)
	}
	if len(ns) == 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d">no events</text>`, padLeft, padTop+rowH/2)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // every stored text in it went through text
}

// text writes stored text s as SVG character data: terminal escapes and
// bidirectional overrides made visible by [inspect.Inert], then every
// markup character escaped.
func text(b *bytes.Buffer, s string) {
	escape(b, inspect.Inert(s))
}

// escape writes s XML-escaped. The mutation switch mutSVG writes it as it
// is.
func escape(b *bytes.Buffer, s string) {
	if mutSVG {
		b.WriteString(s)
		return
	}
	xml.EscapeText(b, []byte(s))
}

// clip cuts s to n runes, marking the cut.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
