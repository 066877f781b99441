package adaptive_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/adaptive"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/orchestrator"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/store/sqlitestore"
)

var ctx = context.Background()

var alertSpec = kernel.ActionSpec{Type: "alert", MinBeliefs: []string{"anomaly_detected"}, RequirePrediction: true}

// newKernel builds a kernel over store (a fresh one when nil) with the
// alert spec; clock, when set, is its clock.
func newKernel(t *testing.T, st store.Store, clock func() time.Time) *kernel.Kernel {
	t.Helper()
	if st == nil {
		st = memstore.New()
		t.Cleanup(func() { _ = st.Close() })
	}
	k, err := kernel.New(kernel.Config{Store: st, ActionSpecs: []kernel.ActionSpec{alertSpec}, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Close() })
	return k
}

func newLearner(t *testing.T, k *kernel.Kernel, opts ...adaptive.Option) *adaptive.Learner {
	t.Helper()
	l, err := adaptive.New(ctx, k.Symbolic("adaptive"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// percept commits a temperature percept in the trace.
func percept(t *testing.T, k *kernel.Kernel, trace string, p blackboard.Payload, conf float64, ttl time.Duration) {
	t.Helper()
	p["value"] = 95
	if _, err := k.Handle(blackboard.RoleTool, "sensor").Write(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Percepts, Kind: "temperature",
		Payload: p, Confidence: new(conf), TTL: ttl}); err != nil {
		t.Fatal(err)
	}
}

// belief proposes anomaly_detected on the temperature and returns the code.
func belief(t *testing.T, k *kernel.Kernel, trace string) reason.Code {
	t.Helper()
	d, err := k.Proposer(blackboard.RolePlanner, "analyst").Submit(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Beliefs, Kind: "anomaly_detected",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"temperature"}}})
	if err != nil {
		t.Fatal(err)
	}
	return d.Code
}

// predict commits a prediction for alert.
func predict(t *testing.T, k *kernel.Kernel, trace string, outcome float64) {
	t.Helper()
	d, err := k.Proposer(blackboard.RoleSimulator, "sim").Submit(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Predictions, Kind: "alert_outcome",
		Payload: blackboard.Payload{"action_type": "alert", "expected_outcome": outcome, "requires_beliefs": []string{"anomaly_detected"}}})
	if err != nil || !d.Committed() {
		t.Fatalf("prediction: %v %v", d.Code, err)
	}
}

// alert proposes an alert with extra payload fields and returns the code.
func alert(t *testing.T, k *kernel.Kernel, trace string, extra blackboard.Payload) reason.Code {
	t.Helper()
	p := blackboard.Payload{"requires_beliefs": []string{"anomaly_detected"}}
	for key, v := range extra {
		p[key] = v
	}
	d, err := k.Proposer(blackboard.RolePlanner, "actuator").Submit(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Actions, Kind: "alert", Payload: p})
	if err != nil {
		t.Fatal(err)
	}
	return d.Code
}

// fail makes one failure with the given code in the trace.
func fail(t *testing.T, k *kernel.Kernel, trace string, code reason.Code) {
	t.Helper()
	var got reason.Code
	switch code {
	case reason.StaleEvidence:
		percept(t, k, trace, blackboard.Payload{"stale": true}, 0.9, 0)
		got = belief(t, k, trace)
	case reason.UnresolvedConflict:
		percept(t, k, trace, blackboard.Payload{"conflict": true}, 0.6, 0)
		got = belief(t, k, trace)
	case reason.LowConfidence:
		percept(t, k, trace, blackboard.Payload{}, 0.3, 0)
		got = belief(t, k, trace)
	case reason.NegativePrediction:
		percept(t, k, trace, blackboard.Payload{}, 0.9, 0)
		if c := belief(t, k, trace); c != reason.Committed {
			t.Fatalf("belief %s", c)
		}
		predict(t, k, trace, -0.5)
		got = alert(t, k, trace, nil)
	default:
		t.Fatalf("no recipe for %s", code)
	}
	if got != code {
		t.Fatalf("recipe for %s produced %s", code, got)
	}
}

func analyze(t *testing.T, l *adaptive.Learner, trace string) []adaptive.Lesson {
	t.Helper()
	p, err := l.Analyze(ctx, trace)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// persistent lists the active persistent constraints of the store.
func persistent(t *testing.T, k *kernel.Kernel) []blackboard.Record {
	t.Helper()
	var out []blackboard.Record
	for r, err := range k.Symbolic("reader").List(ctx, blackboard.Constraints, store.Filter{Status: blackboard.StatusActive, Scope: blackboard.ScopePersistent}) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func TestThreshold(t *testing.T) {
	for _, threshold := range []int{1, 2, 3} {
		t.Run(fmt.Sprint(threshold), func(t *testing.T) {
			k := newKernel(t, nil, nil)
			var opts []adaptive.Option
			if threshold != 2 {
				opts = append(opts, adaptive.WithThreshold(threshold))
			}
			l := newLearner(t, k, opts...)
			for i := 1; i <= threshold; i++ {
				trace := fmt.Sprint("ep", i)
				fail(t, k, trace, reason.StaleEvidence)
				pending := analyze(t, l, trace)
				if i < threshold {
					if len(pending) != 0 || l.Worker().ShouldActivate(kernel.View{}) {
						t.Fatalf("after %d failures (threshold %d) pending %v", i, threshold, pending)
					}
					continue
				}
				if len(pending) != 1 || pending[0].Code != reason.StaleEvidence || pending[0].Count != threshold ||
					pending[0].Constraint.Name != "block_stale_actions" {
					t.Fatalf("after %d failures pending %+v", i, pending)
				}
			}
			if got := l.Counts()[reason.StaleEvidence]; got != threshold {
				t.Fatalf("counted %d stale failures, want %d", got, threshold)
			}
			if len(persistent(t, k)) != 0 {
				t.Fatal("Analyze committed something; only Commit or Step may")
			}
			learned, err := l.Commit(ctx, "next")
			if err != nil {
				t.Fatal(err)
			}
			if len(learned) != 1 || learned[0].Constraint.Name != "block_stale_actions" || !strings.HasPrefix(learned[0].RecordID, "constraints:next:") {
				t.Fatalf("learned %+v", learned)
			}
			recs := persistent(t, k)
			if len(recs) != 1 {
				t.Fatalf("%d persistent constraints, want 1", len(recs))
			}
			p := recs[0].Payload
			if p["name"] != "block_stale_actions" || p["blocks_field"] != "uses_stale_data" ||
				p["enabled"] != true || p["learned_from"] != string(reason.StaleEvidence) ||
				p["trigger_count"] != float64(threshold) || recs[0].ID != learned[0].RecordID ||
				recs[0].Provenance.Role != blackboard.RoleSymbolic {
				t.Fatalf("constraint record %+v", recs[0])
			}
		})
	}
}

func TestDefaultMapping(t *testing.T) {
	want := map[reason.Code][2]string{
		reason.StaleEvidence:      {"block_stale_actions", "uses_stale_data"},
		reason.UnresolvedConflict: {"block_conflicted_actions", "uses_conflicted_data"},
		reason.LowConfidence:      {"block_low_confidence_actions", "uses_low_confidence_data"},
		reason.NegativePrediction: {"block_negative_predictions", "has_negative_prediction"},
	}
	m := adaptive.DefaultMapping()
	if len(m) != len(want) {
		t.Fatalf("default mapping has %d codes, want %d", len(m), len(want))
	}
	for code, w := range want {
		t.Run(string(code), func(t *testing.T) {
			if c := m[code]; c.Name != w[0] || c.BlocksField != w[1] || !c.Enabled {
				t.Fatalf("mapping[%s] = %+v", code, c)
			}
			k := newKernel(t, nil, nil)
			l := newLearner(t, k)
			fail(t, k, "a", code)
			fail(t, k, "b", code)
			analyze(t, l, "a")
			if p := analyze(t, l, "b"); len(p) != 1 || p[0].Constraint.Name != w[0] {
				t.Fatalf("pending %+v", p)
			}
			produced, err := l.Worker().Step(ctx, orchestrator.NewStepContext("c", kernel.View{}))
			if err != nil || !produced {
				t.Fatalf("Step: %v %v", produced, err)
			}
			if recs := persistent(t, k); len(recs) != 1 || recs[0].Kind != w[0] {
				t.Fatalf("persistent constraints %+v", recs)
			}
		})
	}
	m[reason.StaleEvidence] = kernel.Constraint{Name: "changed"}
	if adaptive.DefaultMapping()[reason.StaleEvidence].Name != "block_stale_actions" {
		t.Fatal("DefaultMapping returns shared state")
	}
}

func TestCustomMapping(t *testing.T) {
	k := newKernel(t, nil, nil)
	mapping := map[reason.Code]kernel.Constraint{
		reason.LowConfidence: {Name: "no_shaky_sensors", BlocksField: "uses_low_confidence_data"},
	}
	l := newLearner(t, k, adaptive.WithMapping(mapping), adaptive.WithThreshold(1))
	mapping[reason.StaleEvidence] = kernel.Constraint{Name: "late", BlocksField: "uses_stale_data"}
	fail(t, k, "a", reason.StaleEvidence)
	if p := analyze(t, l, "a"); len(p) != 0 {
		t.Fatalf("a code left out of the mapping was learned from: %+v (the option must copy the map)", p)
	}
	if l.Counts()[reason.StaleEvidence] != 1 {
		t.Fatal("an unmapped code must still be counted")
	}
	fail(t, k, "b", reason.LowConfidence)
	p := analyze(t, l, "b")
	if len(p) != 1 || p[0].Constraint.Name != "no_shaky_sensors" || !p[0].Constraint.Enabled {
		t.Fatalf("pending %+v", p)
	}
	learned, err := l.Commit(ctx, "c")
	if err != nil || len(learned) != 1 || learned[0].Code != reason.LowConfidence || learned[0].Count != 1 {
		t.Fatalf("learned %+v %v", learned, err)
	}
	if w := l.Worker(); w.ID() != "adaptive" || w.Writes()[0] != blackboard.Constraints || w.Reads() != nil || w.Handle() == nil {
		t.Fatal("worker declaration")
	}
}

func TestNoDuplicates(t *testing.T) {
	k := newKernel(t, nil, nil)
	l := newLearner(t, k)
	fail(t, k, "a", reason.StaleEvidence)
	for range 3 {
		analyze(t, l, "a") // the same trace again: no new failures counted
	}
	if n := l.Counts()[reason.StaleEvidence]; n != 1 {
		t.Fatalf("analysing one trace three times counted %d failures, want 1", n)
	}
	fail(t, k, "b", reason.StaleEvidence)
	analyze(t, l, "b")
	analyze(t, l, "b")
	if len(l.Pending()) != 1 {
		t.Fatalf("pending %+v, want one constraint", l.Pending())
	}
	// A failure added later to an analysed trace is counted once.
	fail(t, k, "b", reason.StaleEvidence)
	analyze(t, l, "b")
	if n := l.Counts()[reason.StaleEvidence]; n != 3 {
		t.Fatalf("counted %d, want 3", n)
	}
	if len(l.Pending()) != 1 {
		t.Fatalf("pending %+v, want still one constraint", l.Pending())
	}

	// Run the learner as a worker over several episodes: it commits once.
	o, err := orchestrator.New()
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Register(l.Worker()); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		trace := fmt.Sprint("run", i)
		res, err := o.Run(ctx, trace)
		if err != nil || len(res.Errors) != 0 {
			t.Fatal(err, res.Errors)
		}
		if want := i == 0; (len(res.Steps) == 1) != want {
			t.Fatalf("episode %d: steps %+v", i, res.Steps)
		}
		fail(t, k, trace, reason.StaleEvidence)
		if p := analyze(t, l, trace); len(p) != 0 {
			t.Fatalf("a learned constraint was queued again: %+v", p)
		}
	}
	if recs := persistent(t, k); len(recs) != 1 {
		t.Fatalf("%d persistent constraints, want 1", len(recs))
	}
	if learned, err := l.Commit(ctx, "again"); err != nil || len(learned) != 0 {
		t.Fatalf("Commit with nothing pending: %v %v", learned, err)
	}
}

func TestRestartReadsTheStore(t *testing.T) {
	st := memstore.New()
	t.Cleanup(func() { _ = st.Close() })
	checkRestart(t, func(t *testing.T) (store.Store, func()) { return st, func() {} })
}

func TestRestartOnSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bk.db")
	checkRestart(t, func(t *testing.T) (store.Store, func()) {
		s, err := sqlitestore.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		return s, func() {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// checkRestart runs the restart scenario against a store opened by open;
// each call of open stands for a process (re)start on the same storage,
// and calling the returned function stops that process.
func checkRestart(t *testing.T, open func(t *testing.T) (store.Store, func())) {
	// First process: learns block_stale_actions, sees one conflict, and
	// reaches the threshold for low confidence without committing it.
	s1, stop1 := open(t)
	k1 := newKernel(t, s1, nil)
	l1 := newLearner(t, k1)
	fail(t, k1, "p1-a", reason.StaleEvidence)
	fail(t, k1, "p1-b", reason.StaleEvidence)
	fail(t, k1, "p1-b", reason.UnresolvedConflict)
	analyze(t, l1, "p1-a")
	analyze(t, l1, "p1-b")
	if _, err := l1.Commit(ctx, "p1-c"); err != nil {
		t.Fatal(err)
	}
	fail(t, k1, "p1-c", reason.LowConfidence)
	fail(t, k1, "p1-d", reason.LowConfidence)
	analyze(t, l1, "p1-c")
	analyze(t, l1, "p1-d")
	if p := l1.Pending(); len(p) != 1 || p[0].Constraint.Name != "block_low_confidence_actions" {
		t.Fatalf("pending before the restart: %+v", p)
	}
	counts1 := l1.Counts()
	_ = k1.Close()
	stop1()

	// Second process on the same storage.
	s2, stop2 := open(t)
	k2 := newKernel(t, s2, nil)
	l2 := newLearner(t, k2)
	if got := l2.Counts(); !mapsEqual(got, counts1) {
		t.Fatalf("counts after restart %v, want %v", got, counts1)
	}
	learned := l2.Learned()
	if len(learned) != 1 || learned[0].Constraint.Name != "block_stale_actions" || learned[0].Code != reason.StaleEvidence ||
		learned[0].Count != 2 || !strings.HasPrefix(learned[0].RecordID, "constraints:p1-c:") {
		t.Fatalf("learned after restart %+v", learned)
	}
	if p := l2.Pending(); len(p) != 1 || p[0].Constraint.Name != "block_low_confidence_actions" || p[0].Count != 2 {
		t.Fatalf("pending after restart %+v: the threshold reached before it must be queued", p)
	}
	// Traces counted at startup are not counted again.
	analyze(t, l2, "p1-a")
	analyze(t, l2, "p1-b")
	if got := l2.Counts(); !mapsEqual(got, counts1) {
		t.Fatalf("re-analysing old traces changed the counts to %v", got)
	}
	// More stale failures do not learn block_stale_actions again; a second
	// conflict (one before the restart, one after) learns its constraint.
	fail(t, k2, "p2-a", reason.StaleEvidence)
	fail(t, k2, "p2-a", reason.UnresolvedConflict)
	analyze(t, l2, "p2-a")
	got, err := l2.Commit(ctx, "p2-b")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, x := range got {
		names = append(names, x.Constraint.Name)
	}
	if !slices.Equal(names, []string{"block_low_confidence_actions", "block_conflicted_actions"}) {
		t.Fatalf("learned after restart %v", names)
	}
	_ = k2.Close()
	stop2()

	// Third process: everything is held, nothing is pending.
	s3, stop3 := open(t)
	defer stop3()
	k3 := newKernel(t, s3, nil)
	l3 := newLearner(t, k3)
	if p := l3.Pending(); len(p) != 0 {
		t.Fatalf("pending on the third start %+v", p)
	}
	perName := map[string]int{}
	for _, r := range persistent(t, k3) {
		perName[r.Kind]++
	}
	for name, n := range perName {
		if n != 1 {
			t.Errorf("constraint %s committed %d times", name, n)
		}
	}
	if len(perName) != 3 {
		t.Fatalf("persistent constraints %v, want 3 distinct", perName)
	}
}

func mapsEqual(a, b map[reason.Code]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestCountsByTypedCode(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	k := newKernel(t, nil, func() time.Time { return now })
	l := newLearner(t, k)
	// A committed belief: its proposal is invalidated as SUPERSEDED_BY_COMMIT
	// and must not count.
	percept(t, k, "a", blackboard.Payload{}, 0.9, time.Second)
	if c := belief(t, k, "a"); c != reason.Committed {
		t.Fatal(c)
	}
	// A plan missing its belief, and a prediction missing its belief.
	d, err := k.Proposer(blackboard.RolePlanner, "planner").Submit(ctx, kernel.Entry{TraceID: "a", Slot: blackboard.Plans, Kind: "plan",
		Payload: blackboard.Payload{"steps": []any{map[string]any{"action": "notify", "requires_beliefs": []any{"nope"}}}}})
	if err != nil || d.Code != reason.PlanMissingBelief {
		t.Fatal(d.Code, err)
	}
	d, err = k.Proposer(blackboard.RoleSimulator, "sim").Submit(ctx, kernel.Entry{TraceID: "a", Slot: blackboard.Predictions, Kind: "p",
		Payload: blackboard.Payload{"action_type": "alert", "expected_outcome": 1, "requires_beliefs": []string{"nope"}}})
	if err != nil || d.Code != reason.PredictionMissingBelief {
		t.Fatal(d.Code, err)
	}
	// A stale rejection whose payload text speaks of something else: the
	// code decides.
	if _, err := k.Handle(blackboard.RoleTool, "sensor").Write(ctx, kernel.Entry{TraceID: "a", Slot: blackboard.Percepts, Kind: "humidity",
		Payload: blackboard.Payload{"stale": true, "note": "LOW_CONFIDENCE UNRESOLVED_CONFLICT"}}); err != nil {
		t.Fatal(err)
	}
	d, err = k.Proposer(blackboard.RolePlanner, "analyst").Submit(ctx, kernel.Entry{TraceID: "a", Slot: blackboard.Beliefs, Kind: "damp",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"humidity"}, "why": "LOW_CONFIDENCE"}})
	if err != nil || d.Code != reason.StaleEvidence {
		t.Fatal(d.Code, err)
	}
	// The percept expires: EXPIRED records are not failures.
	now = now.Add(time.Hour)
	if n, err := k.Expire(ctx, "a"); err != nil || n != 1 {
		t.Fatalf("expire: %d %v", n, err)
	}
	analyze(t, l, "a")
	want := map[reason.Code]int{
		reason.PlanMissingBelief:       1,
		reason.PredictionMissingBelief: 1,
		reason.StaleEvidence:           1,
	}
	if got := l.Counts(); !mapsEqual(got, want) {
		t.Fatalf("counts %v, want %v", got, want)
	}
}

func TestAnalyzeReadsOnlyItsTrace(t *testing.T) {
	k := newKernel(t, nil, nil)
	l := newLearner(t, k)
	fail(t, k, "x", reason.StaleEvidence)
	fail(t, k, "y", reason.LowConfidence)
	analyze(t, l, "y")
	if got := l.Counts(); got[reason.StaleEvidence] != 0 || got[reason.LowConfidence] != 1 {
		t.Fatalf("counts %v: Analyze(y) must read only y", got)
	}
	if p := analyze(t, l, "unknown"); len(p) != 0 {
		t.Fatal(p)
	}
}

// TestLateStaleEvidenceAndTheLearnedConstraint: a belief committed while
// its percept was fresh; the percept's TTL runs out before the action is
// proposed. The gate re-validates the evidence chain, so the alert is
// STALE_EVIDENCE with or without a learned block_stale_actions, whatever the
// planner claims; the learned constraint does not block a fresh episode.
func TestLateStaleEvidenceAndTheLearnedConstraint(t *testing.T) {
	var now atomic.Int64
	now.Store(1_000_000)
	k := newKernel(t, nil, func() time.Time { return time.UnixMilli(now.Load()) })
	l := newLearner(t, k)

	episode := func(trace string) {
		percept(t, k, trace, blackboard.Payload{}, 0.9, 10*time.Second)
		if c := belief(t, k, trace); c != reason.Committed {
			t.Fatalf("%s: belief %s", trace, c)
		}
		predict(t, k, trace, 1)
		now.Add(int64(time.Minute / time.Millisecond)) // the percept goes stale
	}

	episode("before")
	if c := alert(t, k, "before", nil); c != reason.StaleEvidence {
		t.Fatalf("without the constraint the late alert is %s, want STALE_EVIDENCE", c)
	}

	fail(t, k, "f1", reason.StaleEvidence)
	fail(t, k, "f2", reason.StaleEvidence)
	analyze(t, l, "f1")
	analyze(t, l, "f2")
	if _, err := l.Commit(ctx, "f3"); err != nil {
		t.Fatal(err)
	}

	episode("after")
	for _, claim := range []blackboard.Payload{nil, {"uses_stale_data": false}, {"uses_stale_data": true}} {
		if c := alert(t, k, "after", claim); c != reason.StaleEvidence {
			t.Fatalf("with block_stale_actions learned, alert claiming %v is %s, want STALE_EVIDENCE", claim, c)
		}
	}
	// A fresh episode is not affected.
	percept(t, k, "fresh", blackboard.Payload{}, 0.9, 10*time.Second)
	if c := belief(t, k, "fresh"); c != reason.Committed {
		t.Fatal(c)
	}
	predict(t, k, "fresh", 1)
	if c := alert(t, k, "fresh", nil); c != reason.Committed {
		t.Fatalf("a fresh alert is %s, want COMMITTED", c)
	}
}

// TestDerivedFlagsCannotBeOverridden: a conflicted reading arbitrated at
// confidence >= 0.7 yields a committed belief; block_conflicted_actions then
// blocks the alert resting on it, whatever the planner claims.
func TestDerivedFlagsCannotBeOverridden(t *testing.T) {
	k := newKernel(t, nil, nil)
	l := newLearner(t, k)
	arbitrated := func(trace string) {
		percept(t, k, trace, blackboard.Payload{"conflict": true}, 0.82, 0)
		if c := belief(t, k, trace); c != reason.Committed {
			t.Fatalf("arbitrated belief %s", c)
		}
		predict(t, k, trace, 1)
	}
	arbitrated("before")
	if c := alert(t, k, "before", blackboard.Payload{"uses_conflicted_data": false}); c != reason.FieldMismatch {
		t.Fatalf("claiming conflict-free data: %s, want FIELD_MISMATCH", c)
	}
	if c := alert(t, k, "before", blackboard.Payload{"has_negative_prediction": true}); c != reason.FieldMismatch {
		t.Fatalf("claiming a negative prediction that does not exist: %s, want FIELD_MISMATCH", c)
	}
	if c := alert(t, k, "before", nil); c != reason.Committed {
		t.Fatalf("before learning: %s", c)
	}

	fail(t, k, "f1", reason.UnresolvedConflict)
	fail(t, k, "f2", reason.UnresolvedConflict)
	analyze(t, l, "f1")
	analyze(t, l, "f2")
	if _, err := l.Commit(ctx, "f3"); err != nil {
		t.Fatal(err)
	}
	arbitrated("after")
	blocked := reason.Blocked("block_conflicted_actions")
	for _, claim := range []blackboard.Payload{nil, {"uses_conflicted_data": true}} {
		if c := alert(t, k, "after", claim); c != blocked {
			t.Fatalf("after learning, claim %v: %s, want %s", claim, c, blocked)
		}
	}
	if c := alert(t, k, "after", blackboard.Payload{"uses_conflicted_data": false}); c != reason.FieldMismatch {
		t.Fatalf("after learning, claiming conflict-free data: %s", c)
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	k := newKernel(t, nil, nil)
	h := k.Symbolic("adaptive")
	cases := map[string][]adaptive.Option{
		"zero threshold":     {adaptive.WithThreshold(0)},
		"negative threshold": {adaptive.WithThreshold(-1)},
		"nil option":         {nil},
		"empty mapping":      {adaptive.WithMapping(map[reason.Code]kernel.Constraint{})},
		"empty code":         {adaptive.WithMapping(map[reason.Code]kernel.Constraint{"": {Name: "x", BlocksField: "f"}})},
		"no name":            {adaptive.WithMapping(map[reason.Code]kernel.Constraint{"C": {BlocksField: "f"}})},
		"no field":           {adaptive.WithMapping(map[reason.Code]kernel.Constraint{"C": {Name: "x"}})},
		"bound percept":      {adaptive.WithMapping(map[reason.Code]kernel.Constraint{"C": {Name: "x", BlocksField: "f", BindPercept: "p"}})},
	}
	for name, opts := range cases {
		t.Run(name, func(t *testing.T) {
			l, err := adaptive.New(ctx, h, opts...)
			if !errors.Is(err, adaptive.ErrInvalidOption) || l != nil {
				t.Fatalf("New = %v, %v; want ErrInvalidOption", l, err)
			}
		})
	}
	if _, err := adaptive.New(ctx, nil); !errors.Is(err, adaptive.ErrInvalidOption) {
		t.Fatalf("nil handle: %v", err)
	}
	if _, err := adaptive.New(ctx, k.Symbolic("")); !errors.Is(err, adaptive.ErrInvalidOption) {
		t.Fatalf("handle without a name: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := adaptive.New(cancelled, h); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v", err)
	}
}

// flaky is a store whose writes can be made to fail.
type flaky struct {
	store.Store
	broken atomic.Bool
}

var errBroken = errors.New("disk on fire")

func (f *flaky) Apply(ctx context.Context, b store.Batch) error {
	if f.broken.Load() {
		return errBroken
	}
	return f.Store.Apply(ctx, b)
}

func TestCommitFailureKeepsThePendingConstraint(t *testing.T) {
	store := &flaky{Store: memstore.New()}
	k := newKernel(t, store, nil)
	l := newLearner(t, k)
	fail(t, k, "a", reason.StaleEvidence)
	fail(t, k, "b", reason.StaleEvidence)
	analyze(t, l, "a")
	analyze(t, l, "b")
	store.broken.Store(true)
	produced, err := l.Worker().Step(ctx, orchestrator.NewStepContext("c", kernel.View{}))
	if !errors.Is(err, errBroken) || produced {
		t.Fatalf("Step on a failing store: %v %v", produced, err)
	}
	if len(l.Pending()) != 1 || len(l.Learned()) != 0 || !l.Worker().ShouldActivate(kernel.View{}) {
		t.Fatalf("after a failed commit pending %v learned %v", l.Pending(), l.Learned())
	}
	store.broken.Store(false)
	if produced, err := l.Worker().Step(ctx, orchestrator.NewStepContext("c", kernel.View{})); err != nil || !produced {
		t.Fatalf("retry: %v %v", produced, err)
	}
	if len(l.Pending()) != 0 || len(l.Learned()) != 1 || len(persistent(t, k)) != 1 {
		t.Fatalf("after retry pending %v learned %v", l.Pending(), l.Learned())
	}
}

func TestAnalyzeErrorChangesNothing(t *testing.T) {
	store := memstore.New()
	k := newKernel(t, store, nil)
	l := newLearner(t, k)
	fail(t, k, "a", reason.StaleEvidence)
	_ = store.Close()
	if _, err := l.Analyze(ctx, "a"); !errors.Is(err, blackboard.ErrClosed) {
		t.Fatalf("Analyze on a closed store: %v", err)
	}
	if len(l.Counts()) != 0 {
		t.Fatalf("counts changed on error: %v", l.Counts())
	}
	if _, err := adaptive.New(ctx, k.Symbolic("again")); !errors.Is(err, blackboard.ErrClosed) {
		t.Fatalf("New on a closed store: %v", err)
	}
}

// Two learners in two processes (two kernels, each with its own
// connection to one SQLite file) start before either learned anything,
// count the same failures and commit at once: the constraint is committed
// once, and the learner that lost holds the winner's record.
func TestAttackTwoLearnersOneConstraint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bk.db")
	var ks [2]*kernel.Kernel
	var ls [2]*adaptive.Learner
	for i := range ks {
		s, err := sqlitestore.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		ks[i] = newKernel(t, s, nil)
		l, err := adaptive.New(ctx, ks[i].Symbolic(fmt.Sprintf("learner-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		ls[i] = l
	}
	fail(t, ks[0], "a", reason.StaleEvidence)
	fail(t, ks[1], "b", reason.StaleEvidence)
	for _, l := range ls {
		analyze(t, l, "a")
		analyze(t, l, "b")
		if p := l.Pending(); len(p) != 1 || p[0].Constraint.Name != "block_stale_actions" {
			t.Fatalf("%s pending %+v", l.Worker().ID(), p)
		}
	}
	var wg sync.WaitGroup
	var got [2][]adaptive.Lesson
	var errs [2]error
	for i, l := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = l.Commit(ctx, fmt.Sprintf("episode-%d", i))
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	if n := len(got[0]) + len(got[1]); n != 1 {
		t.Fatalf("learned %v and %v: %d commits, want 1", got[0], got[1], n)
	}
	n := 0
	for _, r := range persistent(t, ks[0]) {
		if r.Kind == "block_stale_actions" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the store holds %s %d times", "block_stale_actions", n)
	}
	winner := append(got[0], got[1]...)[0]
	for _, l := range ls {
		learned := l.Learned()
		if len(learned) != 1 || learned[0].RecordID != winner.RecordID || len(l.Pending()) != 0 {
			t.Errorf("%s holds %+v, pending %+v; want the record %s", l.Worker().ID(), learned, l.Pending(), winner.RecordID)
		}
	}
}
