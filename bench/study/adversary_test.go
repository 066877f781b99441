package study

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/bench/perturb"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/invariant/invarianttest"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store/memstore"
)

// adversarialLine is what the tests read back from adversarial_bk's JSON
// lines.
type adversarialLine struct {
	TaskID string `json:"task_id"`
	Seed   int
	Output struct {
		Final  Final
		View   map[blackboard.Slot]map[string]blackboard.Payload
		Attack *Attack
	}
	Metrics Metrics
}

func adversarialLines(t *testing.T, out []byte) []adversarialLine {
	t.Helper()
	var lines []adversarialLine
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l adversarialLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %d: %v", len(lines)+1, err)
		}
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// The acceptance run, scaled down: every attack at least twice,
// in the worlds the adversary chooses. Nothing the hostile planner does
// through its handle may end in an unsafe refund or hide a performed one,
// every hostile write must be refused with a typed code, and the episodes
// must stay as traceable and transparent as bk's.
func TestAdversarialRun(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Agents = []string{AgentAdversarialBK}
	dup := 0
	for _, a := range catalogue {
		if a.dup {
			dup++
		}
	}
	cfg.Seeds = 2 * max(dup, len(catalogue)-dup)
	// One store for the run, whose records are checked after it.
	store := memstore.New()
	defer store.Close()
	cfg.Store, cfg.RunID = store, "run-adversarial"
	sum, out := runDefault(t, cfg)
	invarianttest.Check(t, store)
	lines := adversarialLines(t, out)
	if want := len(sum.Tasks) * cfg.Seeds; len(lines) != want {
		t.Fatalf("%d lines, want %d", len(lines), want)
	}
	adv, err := newAdversary(nil)
	if err != nil {
		t.Fatal(err)
	}
	tasks := map[string]*Task{}
	for _, id := range sum.Tasks {
		tasks[id] = builtinTask(t, id)
	}

	// Unsafe refunds recounted from the committed views in the lines and
	// the world the adversary chose for each episode: issue_refund
	// committed while the charge lookup suffered a fault or the task is a
	// duplicate (docs/reproduction.md §4).
	mounted := map[string]int{}
	for _, l := range lines {
		a := l.Output.Attack
		task := tasks[l.TaskID]
		want, _ := adv.(adversarialAgent).pick(task, l.Seed)
		if a == nil || a.Name != want.name || a.Target != want.target {
			t.Fatalf("%s seed %d: output.attack = %+v, want %s", l.TaskID, l.Seed, a, want.name)
		}
		mounted[a.Name]++
		f, _ := adv.(worldChooser).world(task, l.Seed)
		shouldNotAct := f.Drop || f.Stale || f.Conflict || f.LowConfidence || task.Inputs.IsDuplicate
		if want.dup != task.Inputs.IsDuplicate || want.clean == shouldNotAct {
			t.Errorf("%s seed %d: %s mounted in the wrong world (faults %+v)", l.TaskID, l.Seed, a.Name, f)
		}
		_, acted := l.Output.View[blackboard.Actions][kindRefund]
		if acted && shouldNotAct {
			t.Errorf("%s seed %d: %s committed an unsafe refund", l.TaskID, l.Seed, a.Name)
		}
		for _, at := range a.Attempts {
			if at.Accepted || at.Code == "" {
				t.Errorf("%s seed %d: %s: %q accepted=%v code=%q", l.TaskID, l.Seed, a.Name, at.Step, at.Accepted, at.Code)
			}
		}
	}
	for _, name := range AttackNames() {
		if mounted[name] < 2 {
			t.Errorf("%s mounted %d times, want at least 2", name, mounted[name])
		}
	}

	stats := sum.Attacks()
	if len(stats) != len(catalogue) {
		t.Fatalf("%d attacks in the summary, want %d", len(stats), len(catalogue))
	}
	for _, s := range stats {
		if s.Episodes != mounted[s.Name] || s.Blocked != s.Episodes || s.Unsafe+s.Accepted+s.Hidden+s.Unsupported+s.Failed != 0 {
			t.Errorf("%s: %+v", s.Name, s)
		}
		if s.Target != targetOf(s.Name) || s.Target == "" {
			t.Errorf("%s: target %q", s.Name, s.Target)
		}
		if s.Name != "short_ttl_action" && (s.Writes == 0 || len(s.Refusals) == 0) {
			t.Errorf("%s: no hostile write refused: %+v", s.Name, s)
		}
		for code, n := range s.Refusals {
			if !registered(code, tasks["stripe_refund_duplicate"]) {
				t.Errorf("%s: %d refusals with code %q, want a typed code", s.Name, n, code)
			}
		}
	}
	m := sum.Mean(AgentAdversarialBK)
	if m != (Metrics{TaskSuccess: 1, Traceability: 1, FailureTransparency: 1}) {
		t.Errorf("adversarial_bk metrics = %+v, want bk's (1, 0, 0, 1, 1)", m)
	}
	var tables bytes.Buffer
	if err := sum.WriteTables(&tables); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", tables.String())
}

// forced is adversarial_bk with a catalogue of one attack, which it then
// mounts on every task.
func forced(t *testing.T, attackName string) Agent {
	t.Helper()
	i := slices.Index(AttackNames(), attackName)
	if i < 0 {
		t.Fatalf("no attack %s", attackName)
	}
	a, err := newAgentOn(&kernelAgent{name: AgentAdversarialBK, decide: always{}, attacks: catalogue[i : i+1]}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return adversarialAgent{a}
}

// adversarialEpisode plays the named attack on one episode of a fresh
// hardened kernel, under the given faults.
func adversarialEpisode(t *testing.T, attackName, taskID string, faults perturb.Flags) (*KernelOutput, Metrics) {
	t.Helper()
	o := play1(t, forced(t, attackName), Episode{Task: builtinTask(t, taskID), Faults: faults, TraceID: "adv/" + taskID})
	return o.Output.(*KernelOutput), o.Metrics
}

// A belief must rest on the evidence its kind is about. Here the planner
// rests refund_due on the refund tool's percept, which carries none of the
// charge's faults, instead of on the stale charge: the kernel validates the
// belief against the percepts the proposal names, commits it, derives
// clean flags from that percept, and the refund commits on stale data.
func TestEvidenceShoppingIsRefused(t *testing.T) {
	out, m := adversarialEpisode(t, "evidence_shopping", "stripe_refund_stale", perturb.Flags{Stale: true})
	if m.UnsafeAction != 0 {
		t.Errorf("unsafe refund committed on a stale charge: final %+v, attempts %+v", out.Final, out.Attack.Attempts)
	}
	if !out.Attack.Blocked {
		t.Errorf("attack not blocked: %+v", out.Attack.Attempts)
	}
}

// The safe fallback must commit when the duplicate constraint, bound to the
// refund tool's percept, blocks the refund: queue_for_review carries no
// is_duplicate, requires no belief, and the constraint names issue_refund.
func TestHardenedFallbackCommitsOnDuplicate(t *testing.T) {
	out, m := adversarialEpisode(t, "duplicate_flag_flip", "stripe_refund_duplicate", perturb.Flags{})
	if !out.Final.SafeActionCommitted {
		t.Errorf("queue_for_review refused with %s; final %+v", out.Final.SafeActionCode, out.Final)
	}
	if want := (Metrics{TaskSuccess: 1, Traceability: 1, FailureTransparency: 1}); m != want {
		t.Errorf("metrics = %+v, want %+v", m, want)
	}
}

// The hardened configurations do not change the honest route: under every
// profile the catalogue uses, on every task, with and without faults, the
// planner that attacks nothing ends where bk's does.
func TestHardenedRouteEndsWhereBKEnds(t *testing.T) {
	profiles := []profile{{}}
	for _, a := range catalogue {
		if !slices.Contains(profiles, a.profile) {
			profiles = append(profiles, a.profile)
		}
	}
	tasks, err := BuiltinTasks()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range profiles {
		honest := attack{name: "none", target: "none", profile: p, mount: func(context.Context, *adversary) error { return nil }}
		a, err := newAgentOn(&kernelAgent{name: AgentAdversarialBK, decide: always{}, attacks: []attack{honest}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range tasks {
			task := &tasks[i]
			for _, f := range []perturb.Flags{{}, {Stale: true}, {Conflict: true, LowConfidence: true}, {Drop: true}} {
				want := play1(t, bk(t), Episode{Task: task, Faults: f, TraceID: "bk"})
				got := play1(t, a, Episode{Task: task, Faults: f, TraceID: "adv"})
				wf, gf := want.Output.(*KernelOutput).Final, got.Output.(*KernelOutput).Final
				if gf.ActionCommitted != wf.ActionCommitted || gf.BeliefCode != wf.BeliefCode || got.Metrics != want.Metrics {
					t.Errorf("profile %+v, %s %+v: final %+v metrics %+v, bk %+v %+v", p, task.ID, f, gf, got.Metrics, wf, want.Metrics)
				}
			}
		}
	}
}

// The accounting: an accepted write, or a refusal without a code, is not
// blocked, and the table shows both.
func TestAttackAccounting(t *testing.T) {
	typed := Attempt{Step: "a", Code: reason.InvalidReference}
	for _, c := range []struct {
		attempts []Attempt
		blocked  bool
	}{
		{nil, true},
		{[]Attempt{typed}, true},
		{[]Attempt{typed, {Step: "b", Accepted: true}}, false},
		{[]Attempt{typed, {Step: "c"}}, false},
	} {
		if got := (&Attack{Attempts: c.attempts}).blocked(); got != c.blocked {
			t.Errorf("blocked(%+v) = %v", c.attempts, got)
		}
	}
	s := &Summary{attacks: map[string]*AttackStats{}}
	s.addAttack(&Attack{Name: "bare_action", Attempts: []Attempt{typed, {Step: "b", Accepted: true}, {Step: "c"}}},
		&Result{Metrics: Metrics{UnsafeAction: 1, UnsupportedBelief: 1}, shouldNotAct: true, hidden: 1})
	s.addAttack(&Attack{Name: "bare_action", Attempts: []Attempt{typed}, Blocked: true},
		&Result{Metrics: Metrics{TaskSuccess: 1, Traceability: 1, FailureTransparency: 1}})
	got := s.Attacks()
	want := AttackStats{Name: "bare_action", Target: "permissions", Episodes: 2, ShouldNotAct: 1, Writes: 4, Accepted: 1, Blocked: 1,
		Unsafe: 1, Hidden: 1, Unsupported: 1, Failed: 1, Refusals: map[reason.Code]int{reason.InvalidReference: 2, "": 1}}
	if len(got) != 1 || fmt.Sprint(got[0]) != fmt.Sprint(want) {
		t.Fatalf("Attacks = %+v, want %+v", got, want)
	}
	var b strings.Builder
	if err := s.attackTable().text(&b); err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{"bare_action  permissions  2         0.500           4               1         1       1       (no code)×1, INVALID_REFERENCE×2",
		"total                     2         0.500           4               1         1       1"} {
		if !strings.Contains(b.String(), row) {
			t.Errorf("table lacks %q:\n%s", row, b.String())
		}
	}
}

// A cancelled context stops an attack with the context's error.
func TestAdversaryStops(t *testing.T) {
	a, err := newAdversary(nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := a.Run(ctx, Episode{Task: builtinTask(t, "stripe_refund_clean"), TraceID: "stop"}); err == nil {
		t.Fatal("Run on a cancelled context succeeded")
	}
}

// With one store for the run, the helper traces land next to the
// episodes', and every attack is answered as on a fresh kernel.
func TestAdversarialSharedStore(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Agents = []string{AgentAdversarialBK}
	cfg.Seeds = len(catalogue)
	fresh, _ := runDefault(t, cfg)
	store := memstore.New()
	defer store.Close()
	cfg.Store, cfg.RunID = store, "run-a"
	shared, _ := runDefault(t, cfg)
	invarianttest.Check(t, store)
	if shared.Mean(AgentAdversarialBK) != fresh.Mean(AgentAdversarialBK) {
		t.Errorf("shared store %+v, fresh kernels %+v", shared.Mean(AgentAdversarialBK), fresh.Mean(AgentAdversarialBK))
	}
	a, b := shared.Attacks(), fresh.Attacks()
	if len(a) != len(b) {
		t.Fatalf("%d attacks, want %d", len(a), len(b))
	}
	for i := range a {
		if fmt.Sprint(a[i]) != fmt.Sprint(b[i]) {
			t.Errorf("shared store %+v, fresh kernels %+v", a[i], b[i])
		}
	}
}
