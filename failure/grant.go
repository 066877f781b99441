package failure

import (
	"fmt"
	"strings"
	"sync"
)

// yield is the semantic yield check, run after every tool call of a worker
// holding a grant ([Grant.Turn]). It reports whether the failure ends the grant at once,
// and why. It is a fixed function of the failure's class and Retryable; no
// model is asked and no model can overrule it.
//
// Only a retryable skill failure (code_syntax, function_mismatch,
// format_error) lets the worker continue: it can correct its own mistake
// with the error in hand. Everything else ends the grant: state failures
// (auth_error, duplicate), spec failures (endpoint_unknown, not_found),
// infrastructure failures (rate_limit, network, provider_down), unknown
// and untyped failures, and a skill failure marked not retryable.
func yield(f Failure) (yield bool, reason string) {
	c := f.Category()
	if c == "" {
		return true, "untyped failure: return to the kernel"
	}
	k := classOf(c)
	switch {
	case k == classSkill && f.Retryable():
		return false, fmt.Sprintf("%s is a skill failure: the worker corrects it within its grant", c)
	case k == classSkill:
		return true, fmt.Sprintf("%s is marked not retryable: return to the kernel", c)
	}
	return true, fmt.Sprintf("%s is a %s failure the worker cannot repair: return to the kernel", c, k)
}

// GrantEnd is how a grant ended: "" while it is still running, else one
// of the ends below.
type GrantEnd string

// Ends of a grant.
const (
	GrantYielded = GrantEnd("YIELD") // a tool call failed in a way the worker cannot repair
	GrantSpent   = GrantEnd("SPENT") // every turn was used
)

// TrajectoryEntry is one turn of a grant; a trajectory lists the turns in
// order, the first being turn 1.
type TrajectoryEntry struct {
	Tool string // the tool called, as given to [Grant.Turn]
	// Status and Category are the failure's; both "" for a turn that
	// succeeded.
	Status   ExecStatus
	Category Category
}

// Grant is a worker's bounded authority: at most a fixed number of turns
// (tool calls), ended at once by a failure the worker cannot repair. The
// number of turns is set by [NewGrant] and nothing can raise it.
//
// A Grant is safe for concurrent use, though its turns are meant to come
// from one worker in order.
type Grant struct {
	mu    sync.Mutex
	turns int
	steps []TrajectoryEntry
	end   GrantEnd
	last  Failure // the last failure seen
}

// NewGrant returns a grant of the given number of turns; 1 when turns is 0
// or less.
func NewGrant(turns int) *Grant {
	return &Grant{turns: max(turns, 1)}
}

// Turn records one tool call of the grant holder: err is the call's error
// (nil for success; a non-nil error is typed by [Classify], so pass the
// error of [Evaluate] for a call that returned without error but without
// its data). It reports whether the holder may go on, and why not.
//
// A failure for which the yield check says yield ends the grant (YIELD); the last
// turn ends it whatever its outcome (SPENT). A turn after the end is not
// recorded and is answered false.
func (l *Grant) Turn(tool string, err error) (cont bool, reason string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.end != "" {
		return false, "grant already ended: " + string(l.end)
	}
	e := TrajectoryEntry{Tool: tool}
	yields, why := false, "ok"
	if err != nil {
		f := Classify(err)
		l.last = f
		e.Status, e.Category = f.Status(), f.Category()
		yields, why = yield(f)
	}
	l.steps = append(l.steps, e)
	switch {
	case yields:
		l.end = GrantYielded
		return false, why
	case len(l.steps) >= l.turns:
		l.end = GrantSpent
		return false, fmt.Sprintf("grant spent: %d of %d turns used", len(l.steps), l.turns)
	}
	return true, why
}

// Turns is the number of turns the grant grants.
func (l *Grant) Turns() int { return l.turns }

// End reports how the grant ended, or "" while it is open.
func (l *Grant) End() GrantEnd {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.end
}

// LastFailure is the failure of the latest failed turn: on a yield, the
// failure that caused it, which is what the kernel hands to [RemedyFor].
func (l *Grant) LastFailure() (Failure, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last, l.last.status != ""
}

// Trajectory returns the turns taken so far, as a new slice.
func (l *Grant) Trajectory() []TrajectoryEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]TrajectoryEntry(nil), l.steps...)
}

// maxTool bounds the bytes of a tool name in [Grant.String].
const maxTool = 32

// String is the trajectory in one compact line for the kernel's context:
// "T1(write) ✓ → T2(test) × code_syntax → T3(call) × auth_error → YIELD".
// The end marker (YIELD or SPENT) appears once the grant has ended.
func (l *Grant) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	parts := make([]string, 0, len(l.steps)+1)
	for i, e := range l.steps {
		s := fmt.Sprintf("T%d", i+1)
		if e.Tool != "" {
			s += "(" + clip(e.Tool, maxTool) + ")"
		}
		if e.Status == "" {
			s += " ✓"
		} else {
			s += " × " + string(e.Category)
		}
		parts = append(parts, s)
	}
	if l.end != "" {
		parts = append(parts, string(l.end))
	}
	return strings.Join(parts, " → ")
}
