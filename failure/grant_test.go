package failure_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/blackboardkernel/bk/failure"
)

// wantYield is the yield table of the seed, written out here: state, spec,
// infrastructure and unknown failures end the grant; skill failures do not.
var wantYield = map[failure.Category]bool{
	"auth_error":        true,
	"duplicate":         true,
	"endpoint_unknown":  true,
	"not_found":         true,
	"rate_limit":        true,
	"network":           true,
	"provider_down":     true,
	"unknown":           true,
	"code_syntax":       false,
	"function_mismatch": false,
	"format_error":      false,
}

func TestYield(t *testing.T) {
	for _, c := range failure.Categories() {
		for _, retryable := range []bool{true, false} {
			f := failure.New(statusOf[c], "x").WithRetryable(retryable)
			yield, reason := failure.Yield(f)
			want := wantYield[c] || !retryable
			if yield != want || reason == "" {
				t.Errorf("%s retryable=%v: yield %v (%q), want %v", c, retryable, yield, reason, want)
			}
		}
	}
	for _, f := range []failure.Failure{{}, failure.New("FAILED_BOGUS", "")} {
		if yield, _ := failure.Yield(f); !yield {
			t.Errorf("%v does not yield", f)
		}
	}
}

func TestGrantYieldsOnEachBlockingCategory(t *testing.T) {
	for c, blocks := range wantYield {
		if !blocks {
			continue
		}
		l := failure.NewGrant(5)
		if cont, _ := l.Turn("write", nil); !cont {
			t.Fatalf("%s: a successful first turn ended the grant", c)
		}
		cause := fmt.Errorf("call: %w", failure.New(statusOf[c], "blocked"))
		cont, reason := l.Turn("call", cause)
		if cont || l.End() != failure.GrantYielded || l.Used() != 2 || !strings.Contains(reason, string(c)) {
			t.Errorf("%s: cont=%v end=%q used=%d reason=%q", c, cont, l.End(), l.Used(), reason)
		}
		if f, ok := l.LastFailure(); !ok || f.Category() != c {
			t.Errorf("%s: last failure %v", c, f)
		}
		want := fmt.Sprintf("T1(write) ✓ → T2(call) × %s → YIELD", c)
		if got := l.String(); got != want {
			t.Errorf("%s: trajectory %q, want %q", c, got, want)
		}
		if cont, reason := l.Turn("again", nil); cont || !strings.Contains(reason, "already ended") || l.Used() != 2 {
			t.Errorf("%s: a turn after the yield: cont=%v reason=%q used=%d", c, cont, reason, l.Used())
		}
	}
}

func TestGrantContinuesOnSkillFailures(t *testing.T) {
	l := failure.NewGrant(5)
	steps := []struct {
		tool string
		err  error
	}{
		{"write", nil},
		{"test", failure.New(failure.StatusSyntax, "line 12")},
		{"fix", nil},
		{"test", failure.New(failure.StatusFunctionMismatch, "fetch() takes 2 args")},
	}
	for _, s := range steps {
		if cont, reason := l.Turn(s.tool, s.err); !cont {
			t.Fatalf("%s: grant ended: %s", s.tool, reason)
		}
	}
	if l.End() != failure.GrantOpen || l.Used() != 4 {
		t.Fatalf("end %q used %d", l.End(), l.Used())
	}
	if got, want := l.String(), "T1(write) ✓ → T2(test) × code_syntax → T3(fix) ✓ → T4(test) × function_mismatch"; got != want {
		t.Errorf("trajectory %q, want %q", got, want)
	}
	// The last turn ends the grant whatever its outcome.
	cont, reason := l.Turn("test", errors.New(`json: invalid character '}'`))
	if cont || l.End() != failure.GrantSpent || !strings.Contains(reason, "5 of 5") {
		t.Fatalf("last turn: cont=%v end=%q reason=%q", cont, l.End(), reason)
	}
	if f, ok := l.LastFailure(); !ok || f.Category() != failure.FormatError || !f.Legacy() {
		t.Errorf("last failure %v legacy=%v", f, f.Legacy())
	}
	if !strings.HasSuffix(l.String(), "× format_error → SPENT") {
		t.Errorf("trajectory %q", l.String())
	}
	tr := l.Trajectory()
	if len(tr) != 5 || tr[1] != (failure.TrajectoryEntry{Tool: "test", Status: failure.StatusSyntax, Category: failure.CodeSyntax}) ||
		tr[2] != (failure.TrajectoryEntry{Tool: "fix"}) {
		t.Errorf("trajectory %+v", tr)
	}
	tr[0].Tool = "changed"
	if l.Trajectory()[0].Tool != "write" {
		t.Error("Trajectory aliases the grant's state")
	}
}

func TestGrantSkillFailureNotRetryableYields(t *testing.T) {
	l := failure.NewGrant(3)
	cont, _ := l.Turn("test", failure.New(failure.StatusSyntax, "x").WithRetryable(false))
	if cont || l.End() != failure.GrantYielded {
		t.Fatalf("cont=%v end=%q", cont, l.End())
	}
}

func TestGrantDefaults(t *testing.T) {
	for _, n := range []int{0, -4} {
		l := failure.NewGrant(n)
		if l.Turns() != 1 {
			t.Fatalf("NewGrant(%d).Turns() = %d", n, l.Turns())
		}
		if _, ok := l.LastFailure(); ok || l.String() != "" {
			t.Fatal("a fresh grant has history")
		}
		if cont, _ := l.Turn("", nil); cont || l.End() != failure.GrantSpent || l.String() != "T1 ✓ → SPENT" {
			t.Fatalf("one-turn grant: cont=%v end=%q %q", cont, l.End(), l.String())
		}
	}
	long := failure.NewGrant(2)
	long.Turn(strings.Repeat("t", 100), nil)
	if s := long.String(); len(s) > 40 || !strings.Contains(s, "…") {
		t.Errorf("long tool name rendered as %q", s)
	}
}

func TestGrantConcurrentTurns(t *testing.T) {
	const turns = 10
	l := failure.NewGrant(turns)
	var wg sync.WaitGroup
	for i := range 4 * turns {
		wg.Go(func() {
			var err error
			if i%2 == 1 {
				err = failure.New(failure.StatusFormat, "bad")
			}
			l.Turn(fmt.Sprint(i), err)
			_ = l.String()
			_ = l.Trajectory()
		})
	}
	wg.Wait()
	if l.Used() != turns || l.End() != failure.GrantSpent {
		t.Fatalf("used %d end %q", l.Used(), l.End())
	}
	if n := len(l.Trajectory()); n != turns {
		t.Fatalf("trajectory of %d turns, want %d", n, turns)
	}
}
