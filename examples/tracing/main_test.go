package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// TestRunPrintsSpansAndLinks: verbose, the stdout exporter prints the
// spans, the refused refund's decision span carries a link, and the
// timeline and the explanation follow; by default one line per span.
func TestRunPrintsSpansAndLinks(t *testing.T) {
	var buf bytes.Buffer
	if err := cli(context.Background(), []string{"--verbose"}, &buf, io.Discard); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		`"Name": "execute_tool lookup_order"`, `"Name": "execute_tool issue_refund"`, `"Name": "toolgate.effect_attempt"`,
		`"Name": "kernel.submit"`, `"Key": "gen_ai.tool.name"`, `"Value": "STALE_EVIDENCE"`,
		"action gating: STALE_EVIDENCE -- action blocked", "root cause: STALE_EVIDENCE on percepts:ticket-42:5",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s", want)
		}
	}
	// The exporter writes one JSON object per span; the refused refund's
	// decision span has a link.
	dec := json.NewDecoder(strings.NewReader(out))
	linked := false
	for {
		var span struct {
			Name       string
			Links      []json.RawMessage
			Attributes []struct {
				Key   string
				Value struct{ Value any }
			}
		}
		if err := dec.Decode(&span); err != nil {
			break
		}
		for _, a := range span.Attributes {
			if span.Name == "kernel.submit" && a.Key == "bk.code" && a.Value.Value == "STALE_EVIDENCE" && len(span.Links) == 1 {
				linked = true
			}
		}
	}
	if !linked {
		t.Errorf("no refused decision span with a link in:\n%s", out)
	}

	buf.Reset()
	if err := cli(context.Background(), nil, &buf, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "-> link to span") || strings.Contains(buf.String(), `"Name":`) ||
		!strings.Contains(buf.String(), "root cause: STALE_EVIDENCE") {
		t.Errorf("default output is not compact, or lacks a link:\n%s", buf.String())
	}
}
