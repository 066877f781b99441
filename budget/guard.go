package budget

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/blackboardkernel/bk/canon"
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

// maxListed bounds the calls a no-progress reason names.
const maxListed = 5

type callKey struct{ tool, digest string }

// Guard is the loop guard of one run. It counts identical tool calls and
// consecutive rounds without progress, and stops them with a
// [*Refusal] that says what repeated. Safe for concurrent use; give
// each run (and each sub-run) its own guard. It keeps one counter per
// distinct call, so its memory is bounded by the run's tool-call budget.
type Guard struct {
	maxIdentical int
	maxIdle      int
	perTool      map[string]int

	mu         sync.Mutex
	attempts   map[callKey]int
	idle       int
	sinceOrder []callKey       // distinct calls since the last round with progress, in order
	since      map[callKey]int // and how often each came
}

// NewGuard returns a loop guard that lets maxIdentical identical calls
// (same tool, same argument digest) through per run and stops the loop
// after maxIdleRounds consecutive rounds without progress; 0 for either
// means its default (2 and 2). It fails with [ErrInvalid] for a negative
// limit.
func NewGuard(maxIdentical, maxIdleRounds int) (*Guard, error) {
	return newGuard(maxIdentical, maxIdleRounds, nil)
}

// newGuard is [NewGuard] with per-tool limits on identical calls, over
// maxIdentical (for a tool meant to be polled with the same arguments).
func newGuard(maxIdentical, maxIdleRounds int, perTool map[string]int) (*Guard, error) {
	switch {
	case maxIdentical < 0:
		return nil, fmt.Errorf("%w: max identical calls %d < 0", ErrInvalid, maxIdentical)
	case maxIdleRounds < 0:
		return nil, fmt.Errorf("%w: max idle rounds %d < 0", ErrInvalid, maxIdleRounds)
	case maxIdentical == 0:
		maxIdentical = defaultMaxIdentical
	}
	if maxIdleRounds == 0 {
		maxIdleRounds = defaultMaxIdleRounds
	}
	for tool, n := range perTool {
		if tool == "" || n < 1 {
			return nil, fmt.Errorf("%w: identical-call limit %d for tool %q", ErrInvalid, n, tool)
		}
	}
	return &Guard{maxIdentical: maxIdentical, maxIdle: maxIdleRounds, perTool: perTool,
		attempts: make(map[callKey]int), since: make(map[callKey]int)}, nil
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
// [*Refusal] (trigger repeated_call). The same tool with other
// arguments is a different call. An empty tool name fails with
// [ErrInvalid].
func (g *Guard) Call(tool, digest string) error {
	if tool == "" {
		return fmt.Errorf("%w: empty tool name", ErrInvalid)
	}
	k := callKey{tool, digest}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.attempts[k]++
	if g.since[k] == 0 {
		g.sinceOrder = append(g.sinceOrder, k)
	}
	g.since[k]++
	limit := g.limitFor(tool)
	if g.attempts[k] <= limit {
		return nil
	}
	return loopDetected(Refusal{Loop: RepeatedCall, Tool: tool, Digest: digest, Repeats: limit,
		Detail: fmt.Sprintf("%s was already called %s with these arguments (%s) in this run; the guard allows %s",
			tool, times(limit), short(digest), times(limit))})
}

// Round is told, at the end of each round, whether the round made
// progress (a kind committed, retracted or changed). After as many consecutive rounds without
// progress as the guard allows, it returns a [*Refusal] (trigger
// no_progress) naming the tool calls made in those rounds, and keeps
// returning it until a round makes progress. A round spent waiting for an
// approval is not a loop: do not count it as idle.
func (g *Guard) Round(changed bool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
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
	return loopDetected(Refusal{Loop: NoProgress, IdleRounds: g.idle,
		Detail: fmt.Sprintf("%d consecutive rounds changed nothing on the blackboard; %s", g.idle, g.listSince())})
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

// Pressure is the guard's loop pressure, in [0, 1], for [State.Loop]:
// the highest of the repeat pressure, the highest over calls of (times
// seen − 1) / (identical calls allowed), which is 1 once a call has been
// refused, and of the current run of idle rounds over the idle rounds
// allowed.
func (g *Guard) Pressure() float64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	p := min(1, float64(g.idle)/float64(g.maxIdle))
	for k, n := range g.attempts {
		p = max(p, min(1, float64(n-1)/float64(g.limitFor(k.tool))))
	}
	return p
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
	return !mutCanonicalDigest
}
