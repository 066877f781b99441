package budget_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/blackboardkernel/bk/budget"
	"github.com/blackboardkernel/bk/reason"
)

func loop(t *testing.T, err error, trigger string) *budget.Refusal {
	t.Helper()
	var e *budget.Refusal
	if !errors.As(err, &e) {
		t.Fatalf("got %v, want a loop refusal", err)
	}
	if !errors.Is(err, budget.ErrLoopDetected) || e.Code != reason.LoopDetected || e.Loop != trigger {
		t.Fatalf("loop refusal %v: trigger %s code %s", err, e.Loop, e.Code)
	}
	return e
}

func TestGuardRepeatedCalls(t *testing.T) {
	g, err := budget.NewGuard(0, 0)
	must(t, err)
	must(t, g.Call("search", "sha256:aaaa"))
	must(t, g.Call("search", "sha256:aaaa")) // one retry is fine
	// Other arguments, or another tool with the same arguments, are other calls.
	must(t, g.Call("search", "sha256:bbbb"))
	must(t, g.Call("fetch", "sha256:aaaa"))
	if p := g.Pressure(); p != 0.5 {
		t.Errorf("pressure before the trip: %v", p)
	}
	e := loop(t, g.Call("search", "sha256:aaaa"), budget.RepeatedCall)
	if e.Tool != "search" || e.Digest != "sha256:aaaa" || e.Repeats != 2 ||
		!strings.Contains(e.Detail, "search was already called 2 times with these arguments") {
		t.Errorf("refusal %+v", e)
	}
	// It stays refused; the planner is told why, with a hint.
	loop(t, g.Call("search", "sha256:aaaa"), budget.RepeatedCall)
	why, ok := budget.ReasonOf(e)
	if !ok || why.Code != reason.LoopDetected || why.Loop != budget.RepeatedCall || why.Tool != "search" || why.Hint == "" {
		t.Errorf("reason %+v", why)
	}
	p := why.Payload()
	if p["loop"] != "repeated_call" || p["repeats"] != 2.0 || p["digest"] != "sha256:aaaa" || p["budget"] != nil || p["idle_rounds"] != nil {
		t.Errorf("reason payload %v", p)
	}
	if p := g.Pressure(); p != 1 {
		t.Errorf("pressure after the trip: %v", p)
	}
	if err := g.Call("", "x"); !errors.Is(err, budget.ErrInvalid) {
		t.Errorf("empty tool: %v", err)
	}
}

func TestGuardOptions(t *testing.T) {
	g, err := budget.NewGuardPerTool(1, 3, map[string]int{"poll_job": 4})
	must(t, err)
	must(t, g.Call("search", "d"))
	if e := loop(t, g.Call("search", "d"), budget.RepeatedCall); !strings.Contains(e.Detail, "called once") {
		t.Errorf("detail %q", e.Detail)
	}
	for range 4 {
		must(t, g.Call("poll_job", "d"))
	}
	loop(t, g.Call("poll_job", "d"), budget.RepeatedCall)
	must(t, g.Round(false))
	must(t, g.Round(false))
	loop(t, g.Round(false), budget.NoProgress)

	for _, bad := range []struct {
		identical, idle int
		perTool         map[string]int
	}{{-1, 0, nil}, {0, -1, nil}, {0, 0, map[string]int{"x": 0}}, {0, 0, map[string]int{"": 3}}} {
		if _, err := budget.NewGuardPerTool(bad.identical, bad.idle, bad.perTool); !errors.Is(err, budget.ErrInvalid) {
			t.Errorf("NewGuard with bad limits %+v: %v", bad, err)
		}
	}
}

func TestGuardNoProgressRounds(t *testing.T) {
	g, err := budget.NewGuard(0, 0)
	must(t, err)
	must(t, g.Call("search", "sha256:0123456789abcdef0123"))
	must(t, g.Round(true)) // progress: what came before is forgotten
	must(t, g.Call("search", "sha256:0123456789abcdef0123"))
	must(t, g.Call("fetch", "sha256:ffff"))
	must(t, g.Round(false)) // one idle round is tolerated
	if p := g.Pressure(); p != 0.5 {
		t.Errorf("pressure after one idle round of two: %v", p)
	}
	_ = g.Call("search", "sha256:0123456789abcdef0123") // refused, but it was made in the idle rounds
	e := loop(t, g.Round(false), budget.NoProgress)
	want := "2 consecutive rounds changed nothing on the blackboard; calls made in them: search(sha256:0123456789ab…) ×2, fetch(sha256:ffff) ×1"
	if e.IdleRounds != 2 || e.Detail != want {
		t.Errorf("refusal %+v\nwant detail %q", e, want)
	}
	r, _ := budget.ReasonOf(e)
	if p := r.Payload(); p["idle_rounds"] != 2.0 || p["tool"] != nil || !strings.Contains(p["hint"].(string), "changed nothing") {
		t.Errorf("reason payload %v", p)
	}
	loop(t, g.Round(false), budget.NoProgress) // until a round makes progress
	must(t, g.Round(true))
	must(t, g.Round(false))
	if e := loop(t, g.Round(false), budget.NoProgress); !strings.HasSuffix(e.Detail, "no tool calls were made in them") {
		t.Errorf("detail %q", e.Detail)
	}
	// Many different calls: the reason names the five most frequent.
	must(t, g.Round(true))
	for i := range 8 {
		for range i + 1 {
			_ = g.Call(fmt.Sprintf("t%d", i), "d")
		}
	}
	must(t, g.Round(false))
	e = loop(t, g.Round(false), budget.NoProgress)
	if !strings.Contains(e.Detail, "t7(d) ×8, t6(d) ×7") || !strings.HasSuffix(e.Detail, "3 more") {
		t.Errorf("detail %q", e.Detail)
	}
}

func TestDigest(t *testing.T) {
	d := func(s string) string {
		t.Helper()
		v, err := budget.Digest(json.RawMessage(s))
		if err != nil {
			t.Fatalf("Digest(%s): %v", s, err)
		}
		return v
	}
	base := d(`{"q":"refund policy","page":1,"filters":{"b":2,"a":[1,2]}}`)
	if !strings.HasPrefix(base, "sha256:") || len(base) != len("sha256:")+64 {
		t.Errorf("digest %q", base)
	}
	if got := d(" {\"filters\": {\"a\": [1, 2], \"b\": 2},\n \"page\": 1, \"q\": \"refund policy\"} "); got != base {
		t.Error("key order or spacing changed the digest")
	}
	for _, other := range []string{
		`{"q":"refund policy","page":2,"filters":{"b":2,"a":[1,2]}}`,
		`{"q":"refund policy","page":1,"filters":{"b":2,"a":[2,1]}}`,
		`{"q":"refund policy","page":1}`,
		`{"q":"refund policy","page":1,"filters":{"b":2,"a":[1,2]},"type":"news"}`, // every key counts
	} {
		if d(other) == base {
			t.Errorf("%s has the same digest", other)
		}
	}
	// Numbers are compared by the double the kernel keeps of them, as
	// everywhere in the module (package canon).
	if d(`{"id":9007199254740993}`) != d(`{"id":9007199254740992}`) || d(`{"n":-0}`) != d(`{"n":0}`) {
		t.Error("numbers the kernel stores alike have different digests")
	}
	if d(``) != d(`null`) || d("  ") != d(`null`) {
		t.Error("empty arguments differ from null")
	}
	for _, bad := range []string{`{`, `{"a":1} {"b":2}`, `nope`, `{"a":1,"a":2}`} {
		if _, err := budget.Digest(json.RawMessage(bad)); !errors.Is(err, budget.ErrInvalid) {
			t.Errorf("Digest(%s) = %v, want ErrInvalid", bad, err)
		}
	}
}

// The guard under parallel workers: exactly the allowed number of
// identical calls get through.
func TestParallelGuardExact(t *testing.T) {
	g, err := budget.NewGuard(0, 0)
	must(t, err)
	var allowed atomic.Int64
	race(64, func(i int) {
		if g.Call("search", "sha256:same") == nil {
			allowed.Add(1)
		}
		_ = g.Call("search", "sha256:other")
		_ = g.Pressure()
	})
	if allowed.Load() != budget.DefaultMaxIdentical || g.Pressure() != 1 {
		t.Errorf("allowed %d, pressure %v", allowed.Load(), g.Pressure())
	}
}

// TestAttackLoopGuardSpellings: a model that respells one call's arguments
// (2, 2.0, 2e0, 20e-1, keys reordered, -0 for 0) must not get a fresh
// allowance for each spelling: under a limit of two, the third spelling of
// the same call is LOOP_DETECTED.
func TestAttackLoopGuardSpellings(t *testing.T) {
	g, err := budget.NewGuard(2, 0)
	must(t, err)
	spellings := []string{
		`{"order":"o1","qty":2,"off":0}`,
		`{"qty":2.0,"order":"o1","off":0}`,
		`{"order":"o1","qty":2e0,"off":-0}`,
		`{"order":"o1","qty":20e-1,"off":0.0}`,
		` { "off" : 0e5 , "qty" : 0.2e1 , "order" : "o1" } `,
		`{"order":"\u006f1","qty":200e-2,"off":0}`,
		`{"order":"o1","qty":2.000,"off":-0.0}`,
		`{"order":"o1","qty":0.02E2,"off":0}`,
	}
	for i, s := range spellings {
		d, err := budget.Digest(json.RawMessage(s))
		must(t, err)
		err = g.Call("refund", d)
		if i < 2 {
			must(t, err)
			continue
		}
		loop(t, err, budget.RepeatedCall)
	}
	if p := g.Pressure(); p != 1 {
		t.Errorf("eight spellings of one call: pressure %v", p)
	}
}
