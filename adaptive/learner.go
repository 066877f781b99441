package adaptive

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/orchestrator"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// ErrInvalidOption is wrapped by the error [New] returns for a nil handle
// or one with an empty name, a threshold below 1, a nil option or a bad
// mapping.
var ErrInvalidOption = errors.New("adaptive: invalid option")

// defaultThreshold is how many failures with one code it takes to learn its
// constraint when [WithThreshold] is not given.
const defaultThreshold = 2

// Payload keys the learner adds to the constraints it commits (see the
// package documentation).
const (
	keyLearnedFrom  = "learned_from"  // the reason code that triggered the constraint
	keyTriggerCount = "trigger_count" // how many failures with that code had been counted
	keyLearnedBy    = "learned_by"    // the learner's worker id
)

// The constraints of the default mapping. Each blocks one of the flags the
// kernel derives for every action from its own evidence chain.
const (
	blockStaleActions         = "block_stale_actions"
	blockConflictedActions    = "block_conflicted_actions"
	blockLowConfidenceActions = "block_low_confidence_actions"
	blockNegativePredictions  = "block_negative_predictions"
)

// DefaultMapping returns a new copy of the default mapping from failure code
// to constraint:
//
//	STALE_EVIDENCE      -> block_stale_actions          (uses_stale_data)
//	UNRESOLVED_CONFLICT -> block_conflicted_actions     (uses_conflicted_data)
//	LOW_CONFIDENCE      -> block_low_confidence_actions (uses_low_confidence_data)
//	NEGATIVE_PREDICTION -> block_negative_predictions   (has_negative_prediction)
func DefaultMapping() map[reason.Code]kernel.Constraint {
	return map[reason.Code]kernel.Constraint{
		reason.StaleEvidence:      {Name: blockStaleActions, Enabled: true, BlocksField: "uses_stale_data"},
		reason.UnresolvedConflict: {Name: blockConflictedActions, Enabled: true, BlocksField: "uses_conflicted_data"},
		reason.LowConfidence:      {Name: blockLowConfidenceActions, Enabled: true, BlocksField: "uses_low_confidence_data"},
		reason.NegativePrediction: {Name: blockNegativePredictions, Enabled: true, BlocksField: "has_negative_prediction"},
	}
}

// Option configures a [Learner] in [New].
type Option func(*Learner)

// WithThreshold sets how many failures with one code it takes to learn the
// code's constraint (default 2; at least 1).
func WithThreshold(n int) Option { return func(l *Learner) { l.threshold = n } }

// WithMapping replaces the default mapping from failure code to the
// constraint learned for it. Every constraint needs a name and a blocked
// field; its Enabled field is ignored (learned constraints are enabled).
// Codes left out are counted but never learned from. The map is copied.
func WithMapping(m map[reason.Code]kernel.Constraint) Option {
	return func(l *Learner) { l.mapping = maps.Clone(m); l.mappingSet = true }
}

// Lesson is a constraint the learner learned: queued ([Learner.Pending]),
// then committed or found in the store ([Learner.Learned]).
type Lesson struct {
	// Constraint is the constraint to commit, or committed. For a
	// persistent constraint found in the store it is read back from the
	// record: its name, whether it is enabled and the field it blocks.
	Constraint kernel.Constraint
	// Code and Count are what triggered it; empty and 0 for a persistent
	// constraint found in the store without that record.
	Code  reason.Code
	Count int
	// RecordID names the constraint record; empty while the lesson is
	// pending.
	RecordID string
}

// analysedSlots are where failures are counted.
var analysedSlots = []blackboard.Slot{blackboard.Beliefs, blackboard.Plans, blackboard.Predictions, blackboard.Actions}

// Learner is the adaptive worker (paper §11.2): it counts invalidated
// beliefs, plans, predictions and actions by their typed reason code and,
// once a mapped code reaches the threshold, commits the code's constraint
// in persistent scope, once.
type Learner struct {
	h          *kernel.Symbolic
	id         string
	threshold  int
	mapping    map[reason.Code]kernel.Constraint
	mappingSet bool
	codes      []reason.Code // mapped codes, sorted: the order constraints are queued in

	mu       sync.Mutex
	counts   map[reason.Code]int
	perTrace map[string]map[reason.Code]int
	held     map[string]int // constraint name -> index in learned
	learned  []Lesson
	pending  []Lesson
}

// New returns a learner committing through h. It first reads what the store
// already holds: every invalidated record of the analysed slots, counted by
// code (as if each trace had been analysed), and every active persistent
// constraint, whose names it will never commit again. A code that already
// reached the threshold without its constraint is queued at once.
//
// It returns an error wrapping [ErrInvalidOption] for bad options, or the
// store's error (for instance [blackboard.ErrClosed], or ctx's error).
func New(ctx context.Context, h *kernel.Symbolic, opts ...Option) (*Learner, error) {
	if h == nil {
		return nil, fmt.Errorf("%w: nil handle", ErrInvalidOption)
	}
	l := &Learner{
		h:         h,
		id:        h.Name(),
		threshold: defaultThreshold,
		mapping:   DefaultMapping(),
		counts:    make(map[reason.Code]int),
		perTrace:  make(map[string]map[reason.Code]int),
		held:      make(map[string]int),
	}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: nil option", ErrInvalidOption)
		}
		o(l)
	}
	if err := l.check(); err != nil {
		return nil, err
	}
	for code := range l.mapping {
		l.codes = append(l.codes, code)
	}
	slices.Sort(l.codes)

	for _, slot := range analysedSlots {
		for r, err := range h.List(ctx, slot, store.Filter{Status: blackboard.StatusInvalidated}) {
			if err != nil {
				return nil, fmt.Errorf("adaptive: reading %s: %w", slot, err)
			}
			if failure(&r) {
				t := l.perTrace[r.Provenance.TraceID]
				if t == nil {
					t = make(map[reason.Code]int, 1)
					l.perTrace[r.Provenance.TraceID] = t
				}
				t[r.Reason]++
				l.counts[r.Reason]++
			}
		}
	}
	for r, err := range h.List(ctx, blackboard.Constraints, store.Filter{Status: blackboard.StatusActive, Scope: blackboard.ScopePersistent}) {
		if err != nil {
			return nil, fmt.Errorf("adaptive: reading constraints: %w", err)
		}
		if r.Mode == blackboard.ModeCommit {
			l.hold(learnedFrom(&r))
		}
	}
	l.queue()
	return l, nil
}

func (l *Learner) check() error {
	switch {
	case l.threshold < 1:
		return fmt.Errorf("%w: threshold %d below 1", ErrInvalidOption, l.threshold)
	case l.id == "":
		return fmt.Errorf("%w: handle with an empty name", ErrInvalidOption)
	case l.mappingSet && len(l.mapping) == 0:
		return fmt.Errorf("%w: empty mapping", ErrInvalidOption)
	}
	for code, c := range l.mapping {
		switch {
		case code == "":
			return fmt.Errorf("%w: mapping with an empty code", ErrInvalidOption)
		case c.Name == "":
			return fmt.Errorf("%w: code %s maps to a constraint without a name", ErrInvalidOption, code)
		case c.BlocksField == "":
			return fmt.Errorf("%w: constraint %q blocks no field", ErrInvalidOption, c.Name)
		case c.BindPercept != "":
			return fmt.Errorf("%w: constraint %q: a learned constraint cannot bind a percept", ErrInvalidOption, c.Name)
		}
	}
	return nil
}

// failure reports whether r is a record the learner counts: invalidated
// with a reason code other than the supersession of a committed proposal.
func failure(r *blackboard.Record) bool {
	return r.Status == blackboard.StatusInvalidated && r.Reason != "" && r.Reason != reason.SupersededByCommit
}

// learnedFrom reads a persistent constraint record.
func learnedFrom(r *blackboard.Record) Lesson {
	name, ok := r.Payload["name"].(string)
	if !ok || name == "" {
		name = r.Kind
	}
	field, _ := r.Payload["blocks_field"].(string)
	enabled, _ := r.Payload["enabled"].(bool)
	code, _ := r.Payload[keyLearnedFrom].(string)
	count, _ := r.Payload.Float(keyTriggerCount)
	return Lesson{Constraint: kernel.Constraint{Name: name, Enabled: enabled, BlocksField: field},
		Code: reason.Code(code), Count: int(count), RecordID: r.ID}
}

// hold records a constraint as present in the store. Callers hold l.mu or
// own l exclusively.
func (l *Learner) hold(x Lesson) {
	if _, ok := l.held[x.Constraint.Name]; ok {
		return
	}
	l.held[x.Constraint.Name] = len(l.learned)
	l.learned = append(l.learned, x)
}

// queue adds to the pending list every mapped code at or over the threshold
// whose constraint is neither held nor pending, and returns what it added.
// Callers hold l.mu or own l exclusively.
func (l *Learner) queue() []Lesson {
	var added []Lesson
	for _, code := range l.codes {
		n := l.counts[code]
		c := l.mapping[code]
		if n < l.threshold {
			continue
		}
		if _, ok := l.held[c.Name]; ok {
			continue
		}
		if slices.ContainsFunc(l.pending, func(p Lesson) bool { return p.Constraint.Name == c.Name }) {
			continue
		}
		c.Enabled = true
		c.Extra = blackboard.Payload{keyLearnedFrom: string(code), keyTriggerCount: n, keyLearnedBy: l.id}
		p := Lesson{Code: code, Count: n, Constraint: c}
		l.pending = append(l.pending, p)
		added = append(added, p)
	}
	return added
}

// Analyze counts the failures recorded in one trace and queues the
// constraints whose code has reached the threshold; it returns those newly
// queued. It reads only that trace. Analysing a trace again counts only
// failures recorded in it since (a trace's failures are never counted
// twice), so it may be called as often as convenient, typically once when an
// episode ends. Errors come from the store (or ctx); on error nothing
// changes.
func (l *Learner) Analyze(ctx context.Context, traceID string) ([]Lesson, error) {
	seen := make(map[reason.Code]int)
	for r, err := range l.h.Trace(ctx, traceID) {
		if err != nil {
			return nil, fmt.Errorf("adaptive: analysing trace %q: %w", traceID, err)
		}
		if slices.Contains(analysedSlots, r.Slot) && failure(&r) {
			seen[r.Reason]++
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	counted := l.perTrace[traceID]
	for code, n := range seen {
		if d := n - counted[code]; d > 0 {
			if counted == nil {
				counted = make(map[reason.Code]int, len(seen))
				l.perTrace[traceID] = counted
			}
			counted[code] = n
			l.counts[code] += d
		}
	}
	return l.queue(), nil
}

// Commit commits every pending constraint, in persistent scope, into the
// given trace (typically the episode about to run) and returns what it
// learned. A constraint that fails to commit stays pending and the error
// (from the kernel or the store) is returned with what was learned before
// it. Commit never commits a constraint whose name the store already holds:
// each commit claims the name in the namespace
// ([kernel.Symbolic.CommitConstraintOnce]), so that of two learners in two
// processes sharing the store one commits it and the other holds that
// record (it is then in [Learner.Learned], not in what Commit returns).
func (l *Learner) Commit(ctx context.Context, traceID string) ([]Lesson, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Lesson
	for len(l.pending) > 0 {
		p := l.pending[0]
		if _, ok := l.held[p.Constraint.Name]; ok {
			l.pending = l.pending[1:]
			continue
		}
		id, created, err := l.commitOnce(ctx, traceID, p.Constraint)
		if err != nil {
			return out, fmt.Errorf("adaptive: committing %q: %w", p.Constraint.Name, err)
		}
		if !created {
			// Another learner (another process on the store) committed
			// it first: hold theirs.
			rec, err := l.h.Get(ctx, id)
			if err != nil {
				return out, fmt.Errorf("adaptive: reading %q: %w", p.Constraint.Name, err)
			}
			l.hold(learnedFrom(&rec))
			l.pending = l.pending[1:]
			continue
		}
		x := p
		x.Constraint.Extra = x.Constraint.Extra.Clone()
		x.RecordID = id
		l.hold(x)
		out = append(out, x)
		l.pending = l.pending[1:]
	}
	return out, nil
}

// commitOnce commits c in persistent scope, claiming its name in the
// namespace so that two learners sharing the store commit it once between
// them; created is false when the name was claimed already, and id is
// the record that claimed it.
func (l *Learner) commitOnce(ctx context.Context, traceID string, c kernel.Constraint) (id string, created bool, err error) {
	if mutLearnOnce {
		id, err = l.h.CommitConstraint(ctx, traceID, c, blackboard.ScopePersistent)
		return id, err == nil, err
	}
	return l.h.CommitConstraintOnce(ctx, traceID, c)
}

// Counts returns how many failures the learner has counted, by code.
func (l *Learner) Counts() map[reason.Code]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.counts)
}

// Learned returns the persistent constraints the learner knows the store
// holds: those found at startup, then those it committed, in that order.
func (l *Learner) Learned() []Lesson {
	l.mu.Lock()
	defer l.mu.Unlock()
	return cloneLessons(l.learned)
}

// Pending returns the constraints queued and not yet committed.
func (l *Learner) Pending() []Lesson {
	l.mu.Lock()
	defer l.mu.Unlock()
	return cloneLessons(l.pending)
}

// cloneLessons copies lessons, each constraint's Extra included.
func cloneLessons(ls []Lesson) []Lesson {
	out := slices.Clone(ls)
	for i := range out {
		out[i].Constraint.Extra = out[i].Constraint.Extra.Clone()
		out[i].Constraint.AppliesTo = slices.Clone(out[i].Constraint.AppliesTo)
	}
	return out
}

// Worker returns the learner as an orchestrator.Worker, to register with
// the episodes' orchestrator: it activates when constraints are pending
// and its step commits them into the step's trace (see [Learner.Commit]),
// reporting whether it committed any. Its id is the handle's name;
// it writes the constraints slot and reads none (the learner reads the
// store between episodes, not the view, so it waits for no other worker).
func (l *Learner) Worker() orchestrator.Worker { return learnerWorker{l} }

// learnerWorker is the learner as a worker.
type learnerWorker struct{ l *Learner }

func (w learnerWorker) ID() string                { return w.l.id }
func (w learnerWorker) Handle() kernel.Handle     { return w.l.h }
func (w learnerWorker) Reads() []blackboard.Slot  { return nil }
func (w learnerWorker) Writes() []blackboard.Slot { return []blackboard.Slot{blackboard.Constraints} }

func (w learnerWorker) ShouldActivate(kernel.View) bool {
	w.l.mu.Lock()
	defer w.l.mu.Unlock()
	return len(w.l.pending) > 0
}

func (w learnerWorker) Step(ctx context.Context, s *orchestrator.StepContext) (bool, error) {
	learned, err := w.l.Commit(ctx, s.TraceID())
	return len(learned) > 0, err
}
