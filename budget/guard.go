package budget

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/blackboardkernel/bk/canon"
	"github.com/blackboardkernel/bk/kernel"
)

// The guard's defaults.
const (
	// DefaultMaxIdentical is how many identical calls (same tool, same
	// argument digest) a guard lets through in one run: the call and one
	// retry. A retry after a timeout or a transient failure is legitimate;
	// a third identical call means the model is not using what the first
	// two returned. Retries the executor makes beneath the gate (the
	// failure package's backoff) never pass the guard and do not count.
	defaultMaxIdentical = 2
	// DefaultMaxIdleRounds is how many consecutive rounds without
	// progress stop the loop: one idle round may be a worker catching up,
	// a second in a row is a loop.
	defaultMaxIdleRounds = 2
)

// GuardOption configures [NewGuard].
type GuardOption func(*Guard)

// MaxIdentical sets how many identical calls of any tool the guard lets
// through per run (at least 1).
func MaxIdentical(n int) GuardOption { return func(g *Guard) { g.maxIdentical = n } }

// ToolMaxIdentical sets the number of identical calls for one tool, over
// [MaxIdentical]: for a tool meant to be polled with the same arguments,
// say.
func toolMaxIdentical(tool string, n int) GuardOption {
	return func(g *Guard) {
		if g.perTool == nil {
			g.perTool = make(map[string]int)
		}
		g.perTool[tool] = n
	}
}

// MaxIdleRounds sets how many consecutive rounds without progress stop
// the loop (at least 1).
func MaxIdleRounds(n int) GuardOption { return func(g *Guard) { g.maxIdle = n } }

// maxListed bounds the calls a no-progress reason names.
const maxListed = 5

type callKey struct{ tool, digest string }

// Guard is the loop guard of one run. It counts identical tool calls and
// consecutive rounds without progress, and stops them with a
// [*LoopDetected] that says what repeated. Safe for concurrent use; give
// each run (and each sub-run) its own guard. It keeps one counter per
// distinct call, so its memory is bounded by the run's tool-call budget.
type Guard struct {
	maxIdentical int
	maxIdle      int
	perTool      map[string]int

	mu         sync.Mutex
	attempts   map[callKey]int
	total      int
	idle       int
	rounds     int
	trips      int
	sinceOrder []callKey       // distinct calls since the last round with progress, in order
	since      map[callKey]int // and how often each came
}

// NewGuard returns a loop guard with the defaults (2,
// 2) changed by opts. It fails with [ErrInvalid] for
// a limit below 1 or an empty tool name.
func NewGuard(opts ...GuardOption) (*Guard, error) {
	g := &Guard{maxIdentical: defaultMaxIdentical, maxIdle: defaultMaxIdleRounds,
		attempts: make(map[callKey]int), since: make(map[callKey]int)}
	for _, o := range opts {
		o(g)
	}
	switch {
	case g.maxIdentical < 1:
		return nil, fmt.Errorf("%w: max identical calls %d < 1", ErrInvalid, g.maxIdentical)
	case g.maxIdle < 1:
		return nil, fmt.Errorf("%w: max idle rounds %d < 1", ErrInvalid, g.maxIdle)
	}
	for tool, n := range g.perTool {
		if tool == "" || n < 1 {
			return nil, fmt.Errorf("%w: identical-call limit %d for tool %q", ErrInvalid, n, tool)
		}
	}
	return g, nil
}

func (g *Guard) limitFor(tool string) int {
	if n, ok := g.perTool[tool]; ok {
		return n
	}
	return g.maxIdentical
}

// Call is asked before a tool call is made, with the tool's name and a
// digest of its arguments ([Digest] computes one). Every call is counted,
// refused ones too; once the same tool and digest have been let through
// as often as the guard allows, the next identical call is refused with a
// [*LoopDetected] (trigger repeated_call). The same tool with other
// arguments is a different call. An empty tool name fails with
// [ErrInvalid].
func (g *Guard) Call(tool, digest string) error {
	if tool == "" {
		return fmt.Errorf("%w: empty tool name", ErrInvalid)
	}
	k := callKey{tool, digest}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.total++
	g.attempts[k]++
	if g.since[k] == 0 {
		g.sinceOrder = append(g.sinceOrder, k)
	}
	g.since[k]++
	limit := g.limitFor(tool)
	if g.attempts[k] <= limit {
		return nil
	}
	g.trips++
	return &loopDetected{Trigger: RepeatedCall, Tool: tool, Digest: digest, Repeats: limit,
		Detail: fmt.Sprintf("%s was already called %s with these arguments (%s) in this run; the guard allows %s",
			tool, times(limit), short(digest), times(limit))}
}

// Round is told, at the end of each round, whether the round made
// progress (see [Progressed]). After as many consecutive rounds without
// progress as the guard allows, it returns a [*LoopDetected] (trigger
// no_progress) naming the tool calls made in those rounds, and keeps
// returning it until a round makes progress. A round spent waiting for an
// approval is not a loop: do not count it as idle.
func (g *Guard) Round(changed bool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.rounds++
	if changed {
		g.idle = 0
		g.sinceOrder = g.sinceOrder[:0]
		clear(g.since)
		return nil
	}
	g.idle++
	if g.idle < g.maxIdle {
		return nil
	}
	g.trips++
	return &loopDetected{Trigger: NoProgress, IdleRounds: g.idle,
		Detail: fmt.Sprintf("%d consecutive rounds changed nothing on the blackboard; %s", g.idle, g.listSince())}
}

// listSince names the calls made since the last round with progress, the
// most frequent first. g.mu is held.
func (g *Guard) listSince() string {
	if len(g.sinceOrder) == 0 {
		return "no tool calls were made in them"
	}
	keys := slices.Clone(g.sinceOrder)
	slices.SortStableFunc(keys, func(a, b callKey) int { return cmp.Compare(g.since[b], g.since[a]) })
	parts := make([]string, 0, maxListed+1)
	for i, k := range keys {
		if i == maxListed {
			parts = append(parts, fmt.Sprintf("%d more", len(keys)-maxListed))
			break
		}
		parts = append(parts, fmt.Sprintf("%s(%s) ×%d", k.tool, short(k.digest), g.since[k]))
	}
	return "calls made in them: " + strings.Join(parts, ", ")
}

// LoopSnapshot is a read-only copy of a guard's counters, for [Measure]
// and for decision records.
type LoopSnapshot struct {
	// Calls counts the tool calls the guard saw, Distinct the different
	// ones among them.
	Calls    int `json:"calls"`
	Distinct int `json:"distinct"`
	// MostRepeated names the call the guard saw most often ("tool
	// digest"), Repeats how often.
	MostRepeated string `json:"most_repeated,omitempty"`
	Repeats      int    `json:"repeats"`
	// RepeatPressure is the highest, over calls, of (times seen − 1) /
	// (identical calls allowed), at most 1: 0 for calls seen once, 1 once
	// a call has been refused.
	RepeatPressure float64 `json:"repeat_pressure"`
	// IdleRounds is the current run of rounds without progress, of
	// MaxIdleRounds allowed; Rounds counts every round reported.
	IdleRounds    int `json:"idle_rounds"`
	MaxIdleRounds int `json:"max_idle_rounds"`
	Rounds        int `json:"rounds"`
	// Trips counts the refusals the guard returned.
	Trips int `json:"trips"`
}

// Snapshot returns a copy of the guard's counters.
func (g *Guard) Snapshot() LoopSnapshot {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := LoopSnapshot{Calls: g.total, Distinct: len(g.attempts), IdleRounds: g.idle, MaxIdleRounds: g.maxIdle,
		Rounds: g.rounds, Trips: g.trips}
	for k, n := range g.attempts {
		name := k.tool + " " + k.digest
		if n > s.Repeats || n == s.Repeats && name < s.MostRepeated { // ties: the smallest name, for a stable answer
			s.Repeats, s.MostRepeated = n, name
		}
		s.RepeatPressure = max(s.RepeatPressure, min(1, float64(n-1)/float64(g.limitFor(k.tool))))
	}
	return s
}

// Digest returns the loop guard's identity of a tool call's JSON arguments
// for [Guard.Call]: [canon.DigestJSON], the module's one digest, so that
// every spelling of one value is one call (2, 2.0, 2e0 and 20e-1 are one
// number, keys are sorted, space is dropped). Empty arguments count as
// null. Arguments that are not exactly one JSON value, or that repeat an
// object key, fail with an error wrapping [ErrInvalid] and
// [canon.ErrInvalid].
//
// Unlike toolgate.ArgsDigest, which leaves out the keys the kernel reads for
// gating, it digests every argument: to the guard, every argument counts.
// Safe for concurrent use.
func Digest(args json.RawMessage) (string, error) {
	if !canonicalDigest() {
		sum := sha256.Sum256(args) // the mutant: arguments as written
		return "sha256:" + hex.EncodeToString(sum[:]), nil
	}
	d, err := canon.DigestJSON(args)
	if err != nil {
		return "", fmt.Errorf("%w: tool arguments: %w", ErrInvalid, err)
	}
	return d, nil
}

// Progressed reports whether the committed state changed between two
// views of a trace: a kind committed, retracted, or its payload changed.
// Pending proposals do not count: a proposal only changes the blackboard
// once the kernel commits it.
func Progressed(before, after kernel.View) bool {
	count := func(v kernel.View) int {
		n := 0
		for _, kinds := range v.Committed {
			n += len(kinds)
		}
		return n
	}
	if count(before) != count(after) {
		return true
	}
	for slot, kinds := range after.Committed {
		for kind, p := range kinds {
			q, ok := before.Committed[slot][kind]
			if !ok || !reflect.DeepEqual(p, q) {
				return true
			}
		}
	}
	return false
}

// times writes a count of calls in words.
func times(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}

// short cuts a digest for a message: its prefix and 12 hex digits.
func short(d string) string {
	const keep = len("sha256:") + 12
	if len(d) > keep+1 {
		return d[:keep] + "…"
	}
	return d
}

// canonicalDigest reports whether [Digest] digests arguments in canonical
// form (off only under its mutation switch).
func canonicalDigest() bool {
	if mutCanonicalDigest {
		return false
	}
	return true
}
