package study

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// kernelTrace renders a trace's records in append order, one line each, in
// the words of the paper's §10.4 traces (the report numbers the lines as
// the paper does only when asked: [Config.Steps]).
func kernelTrace(ctx context.Context, r *kernel.Proposer, traceID string) ([]string, error) {
	var lines []string
	for rec, err := range r.Trace(ctx, traceID) {
		if err != nil {
			return nil, err
		}
		lines = append(lines, recordText(rec))
	}
	return lines, nil
}

// recordText describes one record.
func recordText(r blackboard.Record) string {
	name := string(r.Slot) + "." + r.Kind
	if r.Mode == blackboard.ModePropose {
		switch {
		case r.Status == blackboard.StatusActive:
			return name + " proposed (pending)"
		case r.Reason == reason.SupersededByCommit:
			return name + " proposed -> accepted"
		}
		return name + " proposed -> rejected: " + string(r.Reason)
	}
	var detail string
	switch r.Slot {
	case blackboard.Percepts:
		detail = " " + flagText(r.Payload, r.Provenance.Confidence)
	case blackboard.Evidence:
		detail = fmt.Sprintf(" (passed=%v, arbitrated=%v)", r.Payload.Bool("passed"), r.Payload.Bool("arbitrated"))
	case blackboard.Beliefs:
		detail = " (evidence " + strings.Join(r.EvidenceRefs, ", ") + ")"
	case blackboard.Actions:
		if why, ok := r.Payload["reason"].(string); ok && r.Kind == kernel.FallbackQueueForReview {
			detail = " (reason=" + why + ")"
		}
	}
	verb := " committed"
	if r.Reason != "" && r.Reason != reason.Committed {
		verb = " " + string(r.Reason)
	}
	if r.Status != blackboard.StatusActive {
		verb += " [" + string(r.Status) + "]"
	}
	return name + verb + detail
}

// flagText shows a charge's perturbation flags and confidence, e.g.
// "(stale=true, conflict=false, low_confidence=false)"; an absent flag is
// left out.
func flagText(charge blackboard.Payload, confidence *float64) string {
	var parts []string
	for _, key := range []string{"stale", "conflict", "low_confidence"} {
		if v, ok := charge[key]; ok {
			parts = append(parts, fmt.Sprintf("%s=%v", key, v))
		}
	}
	if confidence != nil {
		parts = append(parts, "confidence="+strconv.FormatFloat(*confidence, 'g', -1, 64))
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// jsonText renders v as compact JSON.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
