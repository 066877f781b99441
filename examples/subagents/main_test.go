package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Each case prints its typed remedies, how it ended and the functional
// state; the lines below must appear in its section, in this order.
func TestRunPrintsEachCase(t *testing.T) {
	var buf bytes.Buffer
	if err := run(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"fast-loop": {
			"coder#1  T1(compile) × code_syntax → SPENT  ✗ reported FAILED_SYNTAX",
			"remedy    code_syntax (FAILED_SYNTAX) → fast_loop [fast loop], next coder",
			"coder#2  T1(compile) ✓ → SPENT",
			"finding   executor: patients = [p1 p2 p3]",
			"ended     quiescent",
			"state     r2: budget 0.14",
		},
		"slow-loop": {
			"executor#1  T1(run_job) × endpoint_unknown → YIELD  ✗ FAILED_ENDPOINT_UNKNOWN",
			"remedy    endpoint_unknown (FAILED_ENDPOINT_UNKNOWN) → slow_loop [slow loop], next researcher",
			"researcher#1  T1(read_docs) ✓ → SPENT",
			"executor#2  T1(run_job) ✓ → SPENT",
			"finding   researcher: endpoint = /v2/patients:batchGet",
			"ended     quiescent",
			"state     r2:",
		},
		"backoff": {
			"executor#1  T1(run_job) × rate_limit → YIELD  ✗ FAILED_RATE_LIMITED",
			"remedy    rate_limit (FAILED_RATE_LIMITED) → backoff [kernel loop], wait 1s, next executor",
			"executor#2  T1(run_job) ✓ → SPENT",
			"ended     quiescent",
			"state     r2: budget 0.00 loop 0.50",
		},
		"auth": {
			"executor#1  T1(run_job) × auth_error → YIELD  ✗ FAILED_AUTH_EXPIRED",
			"remedy    auth_error (FAILED_AUTH_EXPIRED) → escalate [human loop] (no reauth worker for executor: escalate)",
			"ended     escalated",
			"stop      FAILED_AUTH_EXPIRED by executor: escalate",
			"review    queue_for_review queued for a person (actions:auth:",
			"state     at stop:",
		},
		"partial": {
			"executor#1  T1(run_job) × endpoint_unknown → YIELD  ✗ FAILED_INCOMPLETE_FETCH",
			"remedy    endpoint_unknown (FAILED_INCOMPLETE_FETCH) → slow_loop [slow loop], next researcher",
			"executor#2  T1(run_job) ✓ → SPENT",
			"finding   executor: patients = [p1 p2 p3]",
			"ended     quiescent",
		},
		"token-budget": {
			"researcher#1  T1(read_docs) ✓ → SPENT  ✗ BUDGET_EXCEEDED tokens",
			"ended     budget_exceeded",
			"stop      BUDGET_EXCEEDED: tokens of run token-budget/researcher, 400 of 600 used",
			"state     at stop: budget 0.33",
		},
		"tool-budget": {
			"executor#1  T1(run_job) ✓ → T2(run_job) × rate_limit → YIELD  ✗ BUDGET_EXCEEDED tool_calls",
			"ended     budget_exceeded",
			"stop      BUDGET_EXCEEDED: tool_calls of run tool-budget/executor, 1 of 1 used",
			"state     at stop: budget 1.00",
		},
		"loop-guard": {
			"researcher#1  T1(read_docs) ✓ → T2(read_docs) ✓ → T3(read_docs) × duplicate → YIELD  ✗ LOOP_DETECTED repeated_call",
			"ended     loop_detected",
			"stop      LOOP_DETECTED: repeated_call",
			"state     at stop: budget 0.00 loop 1.00",
		},
	}
	sections := strings.Split(strings.TrimSpace(strings.TrimPrefix(buf.String(), legend)), "\n\n")
	if len(sections) != len(want) {
		t.Fatalf("%d sections, want %d:\n%s", len(sections), len(want), buf.String())
	}
	for _, sec := range sections {
		head, _, _ := strings.Cut(sec, "\n")
		_, name, _ := strings.Cut(head, "(trace ")
		name = strings.TrimSuffix(name, ")")
		lines, ok := want[name]
		if !ok {
			t.Errorf("unexpected section %q", head)
			continue
		}
		rest := sec
		for _, l := range lines {
			i := strings.Index(rest, l)
			if i < 0 {
				t.Errorf("%s: %q missing or out of order in\n%s", name, l, sec)
				break
			}
			rest = rest[i+len(l):]
		}
	}
	// The same script gives the same output: no clock, no randomness.
	var again bytes.Buffer
	if err := run(context.Background(), &again); err != nil {
		t.Fatal(err)
	}
	if again.String() != buf.String() {
		t.Errorf("a second run printed something else:\n%s", again.String())
	}
}

// TestLegend: the output starts with the legend, and every kind of line
// the cases print (its first word) is explained in it; -h prints the
// legend too, and an argument is refused.
func TestLegend(t *testing.T) {
	var buf bytes.Buffer
	if err := run(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.HasPrefix(out, legend) {
		t.Fatalf("the output does not start with the legend:\n%s", out[:min(len(out), 400)])
	}
	kinds := 0
	for _, line := range strings.Split(out[len(legend):], "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] == "==" {
			continue
		}
		kinds++
		if !strings.Contains(legend, "\n  "+f[0]+" ") {
			t.Errorf("the legend does not explain %q (line %q)", f[0], line)
		}
	}
	for _, term := range []string{"✓", "×", "SPENT", "YIELD", "…", "✗"} {
		if !strings.Contains(legend, term) {
			t.Errorf("the legend does not explain %q", term)
		}
	}
	if kinds == 0 {
		t.Fatal("no case lines")
	}
	var help, errOut bytes.Buffer
	if err := cli(context.Background(), []string{"-h"}, &help, &errOut); err == nil || !strings.Contains(help.String(), legend) || errOut.Len() != 0 {
		t.Errorf("-h: %v, stdout %q, stderr %q", err, help.String(), errOut.String())
	}
	help.Reset()
	if err := cli(context.Background(), []string{"extra"}, &help, &errOut); err == nil || help.Len() != 0 || !strings.Contains(errOut.String(), "usage: subagents") {
		t.Errorf("extra argument: %v, stdout %q, stderr %q", err, help.String(), errOut.String())
	}
}
