package orchestrator_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/orchestrator"
	"github.com/blackboardkernel/bk/store/memstore"
)

// fake is a worker driven by functions.
type fake struct {
	id       string
	h        kernel.Handle
	reads    []blackboard.Slot
	writes   []blackboard.Slot
	activate func(kernel.View) bool
	step     func(context.Context, *orchestrator.StepContext) (bool, error)
}

func (f *fake) ID() string                { return f.id }
func (f *fake) Handle() kernel.Handle     { return f.h }
func (f *fake) Reads() []blackboard.Slot  { return f.reads }
func (f *fake) Writes() []blackboard.Slot { return f.writes }
func (f *fake) ShouldActivate(v kernel.View) bool {
	if f.activate == nil {
		return true
	}
	return f.activate(v)
}
func (f *fake) Step(ctx context.Context, sc *orchestrator.StepContext) (bool, error) {
	if f.step == nil {
		return false, nil
	}
	return f.step(ctx, sc)
}

var _ orchestrator.Worker = (*fake)(nil)

func newKernel(t testing.TB) *kernel.Kernel {
	t.Helper()
	k, err := kernel.New(kernel.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Close() })
	return k
}

func newOrch(t testing.TB, opts ...orchestrator.Option) *orchestrator.Orchestrator {
	t.Helper()
	o, err := orchestrator.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func stepIDs(res orchestrator.Summary, round int) []string {
	var ids []string
	for _, s := range res.Steps {
		if s.Round == round {
			ids = append(ids, s.WorkerID)
		}
	}
	return ids
}

// sensorAndAnalyst returns a tool worker committing a temperature percept
// once and a planner worker proposing a belief once the percept is in its
// view.
func sensorAndAnalyst(k *kernel.Kernel) (*fake, *fake) {
	tool := k.Handle(blackboard.RoleTool, "sensor")
	planner := k.Proposer(blackboard.RolePlanner, "analyst")
	sensor := &fake{
		id: "sensor", h: tool, writes: []blackboard.Slot{blackboard.Percepts},
		activate: func(v kernel.View) bool { return !v.Has(blackboard.Percepts, "temperature") },
		step: func(ctx context.Context, sc *orchestrator.StepContext) (bool, error) {
			tr := sc.TraceID()
			_, err := tool.Write(ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Percepts, Kind: "temperature",
				Payload: blackboard.Payload{"value": 95}, Confidence: new(0.9)})
			return err == nil, err
		},
	}
	analyst := &fake{
		id: "analyst", h: planner, reads: []blackboard.Slot{blackboard.Percepts}, writes: []blackboard.Slot{blackboard.Beliefs},
		activate: func(v kernel.View) bool {
			return v.Has(blackboard.Percepts, "temperature") && !v.Has(blackboard.Beliefs, "hot")
		},
		step: func(ctx context.Context, sc *orchestrator.StepContext) (bool, error) {
			tr := sc.TraceID()
			d, err := planner.Submit(ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Beliefs, Kind: "hot",
				Payload: blackboard.Payload{"value": true, "depends_on": []string{"temperature"}}})
			return err == nil && d.Committed(), err
		},
	}
	return sensor, analyst
}

func TestOrderFollowsReadsAndWrites(t *testing.T) {
	k := newKernel(t)
	sensor, analyst := sensorAndAnalyst(k)
	o := newOrch(t)
	// Registered reader first: the writer must still run first, and the
	// reader must see the writer's percept in the same round.
	if err := o.Register(analyst, sensor); err != nil {
		t.Fatal(err)
	}
	if got, want := o.Order(), []string{"sensor", "analyst"}; !slices.Equal(got, want) {
		t.Fatalf("order = %v, want %v", got, want)
	}
	res, err := o.Run(context.Background(), "t1")
	if err != nil {
		t.Fatal(err)
	}
	if got := stepIDs(res, 1); !slices.Equal(got, []string{"sensor", "analyst"}) {
		t.Fatalf("round 1 steps = %v, want sensor then analyst", got)
	}
	if !res.View.Has(blackboard.Beliefs, "hot") {
		t.Fatalf("the analyst did not see the sensor's percept in round 1: final view %v", res.View.Committed)
	}
}

func TestOrderTiesAndChains(t *testing.T) {
	k := newKernel(t)
	h := k.Proposer(blackboard.RolePlanner, "p")
	mk := func(id string, reads, writes []blackboard.Slot) *fake {
		return &fake{id: id, h: h, reads: reads, writes: writes}
	}
	P, B, Pr, A, C := blackboard.Percepts, blackboard.Beliefs, blackboard.Predictions, blackboard.Actions, blackboard.Constraints
	cases := []struct {
		name    string
		workers []*fake
		want    []string
	}{
		{"independent workers keep registration order",
			[]*fake{mk("c", nil, nil), mk("a", nil, nil), mk("b", nil, nil)}, []string{"c", "a", "b"}},
		{"chain registered backwards",
			[]*fake{mk("act", []blackboard.Slot{B, Pr}, []blackboard.Slot{A}), mk("sim", []blackboard.Slot{P, B}, []blackboard.Slot{Pr}),
				mk("believe", []blackboard.Slot{P}, []blackboard.Slot{B}), mk("sense", nil, []blackboard.Slot{P})},
			[]string{"sense", "believe", "sim", "act"}},
		{"a worker waits for its last writer; free workers go in registration order",
			[]*fake{mk("sense", nil, []blackboard.Slot{P}), mk("act", []blackboard.Slot{P, C}, []blackboard.Slot{A}),
				mk("other", []blackboard.Slot{P}, nil), mk("learn", nil, []blackboard.Slot{C})},
			[]string{"sense", "other", "learn", "act"}},
		{"a worker reading its own output does not wait for itself",
			[]*fake{mk("b", []blackboard.Slot{P}, nil), mk("a", []blackboard.Slot{P}, []blackboard.Slot{P})}, []string{"a", "b"}},
		{"a cycle is broken by registration order",
			[]*fake{mk("x", []blackboard.Slot{B}, []blackboard.Slot{P}), mk("y", []blackboard.Slot{P}, []blackboard.Slot{B}), mk("z", []blackboard.Slot{B}, nil)},
			[]string{"x", "y", "z"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := newOrch(t)
			for _, w := range tc.workers {
				w.activate = func(kernel.View) bool { return true }
				if err := o.Register(w); err != nil {
					t.Fatal(err)
				}
			}
			if got := o.Order(); !slices.Equal(got, tc.want) {
				t.Fatalf("Order() = %v, want %v", got, tc.want)
			}
			res, err := o.Run(context.Background(), "t")
			if err != nil {
				t.Fatal(err)
			}
			if got := stepIDs(res, 1); !slices.Equal(got, tc.want) {
				t.Fatalf("steps of round 1 = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestQuiescence(t *testing.T) {
	k := newKernel(t)
	sensor, analyst := sensorAndAnalyst(k)
	idle := &fake{id: "idle", h: k.Proposer(blackboard.RolePlanner, "idle"), activate: func(kernel.View) bool { return false },
		step: func(context.Context, *orchestrator.StepContext) (bool, error) {
			t.Error("an inactive worker was stepped")
			return true, nil
		}}
	o := newOrch(t)
	if err := o.Register(sensor, analyst, idle); err != nil {
		t.Fatal(err)
	}
	res, err := o.Run(context.Background(), "q")
	if err != nil {
		t.Fatal(err)
	}
	// Round 1 produces the percept and the belief; round 2 finds nothing
	// to do and ends the run.
	if res.End != orchestrator.EndQuiescent || res.Rounds != 2 {
		t.Fatalf("Quiescent=%v Rounds=%d, want true and 2", res.End == orchestrator.EndQuiescent, res.Rounds)
	}
	if len(res.Steps) != 2 || len(res.Errors) != 0 {
		t.Fatalf("steps %+v errors %v", res.Steps, res.Errors)
	}
}

func TestQuiescenceWhenStepsProduceNothing(t *testing.T) {
	k := newKernel(t)
	calls := 0
	w := &fake{id: "w", h: k.Handle(blackboard.RoleTool, "w"), step: func(context.Context, *orchestrator.StepContext) (bool, error) {
		calls++
		return false, nil
	}}
	o := newOrch(t)
	if err := o.Register(w); err != nil {
		t.Fatal(err)
	}
	res, err := o.Run(context.Background(), "q")
	if err != nil {
		t.Fatal(err)
	}
	if res.End != orchestrator.EndQuiescent || res.Rounds != 1 || calls != 1 {
		t.Fatalf("Quiescent=%v Rounds=%d calls=%d, want true, 1, 1", res.End == orchestrator.EndQuiescent, res.Rounds, calls)
	}
}

func TestRoundLimit(t *testing.T) {
	k := newKernel(t)
	busy := func() *fake {
		return &fake{id: "busy", h: k.Handle(blackboard.RoleTool, "busy"), step: func(context.Context, *orchestrator.StepContext) (bool, error) {
			return true, nil
		}}
	}
	t.Run("default", func(t *testing.T) {
		o := newOrch(t)
		if err := o.Register(busy()); err != nil {
			t.Fatal(err)
		}
		res, err := o.Run(context.Background(), "r")
		if err != nil {
			t.Fatal(err)
		}
		if res.End == orchestrator.EndQuiescent || res.Rounds != orchestrator.DefaultMaxRounds || len(res.Steps) != orchestrator.DefaultMaxRounds {
			t.Fatalf("Quiescent=%v Rounds=%d steps=%d, want false, %d, %d",
				res.End == orchestrator.EndQuiescent, res.Rounds, len(res.Steps), orchestrator.DefaultMaxRounds, orchestrator.DefaultMaxRounds)
		}
	})
	t.Run("set in New and overridden per run", func(t *testing.T) {
		o := newOrch(t, orchestrator.WithMaxRounds(5))
		if err := o.Register(busy()); err != nil {
			t.Fatal(err)
		}
		res, err := o.Run(context.Background(), "r")
		if err != nil {
			t.Fatal(err)
		}
		if res.Rounds != 5 || res.End == orchestrator.EndQuiescent {
			t.Fatalf("Rounds=%d Quiescent=%v, want 5 false", res.Rounds, res.End == orchestrator.EndQuiescent)
		}
		res, err = o.Run(context.Background(), "r2", orchestrator.WithMaxRounds(3))
		if err != nil {
			t.Fatal(err)
		}
		if res.Rounds != 3 {
			t.Fatalf("Rounds=%d, want 3", res.Rounds)
		}
	})
}

func TestFailingWorkersAreIsolated(t *testing.T) {
	k := newKernel(t)
	boom := errors.New("boom")
	stepPanic := &fake{id: "step-panic", h: k.Handle(blackboard.RoleTool, "a"), step: func(context.Context, *orchestrator.StepContext) (bool, error) {
		panic("kaput")
	}}
	activatePanic := &fake{id: "activate-panic", h: k.Handle(blackboard.RoleTool, "b"), activate: func(kernel.View) bool {
		panic(boom)
	}}
	erring := &fake{id: "erring", h: k.Handle(blackboard.RoleTool, "c"), step: func(context.Context, *orchestrator.StepContext) (bool, error) {
		return false, boom
	}}
	var nilMap map[string]int
	nilWrite := &fake{id: "nil-map", h: k.Handle(blackboard.RoleTool, "d"), step: func(context.Context, *orchestrator.StepContext) (bool, error) {
		nilMap["x"] = 1 // a runtime error panic
		return true, nil
	}}
	good := 0
	healthy := &fake{id: "healthy", h: k.Handle(blackboard.RoleTool, "e"), step: func(context.Context, *orchestrator.StepContext) (bool, error) {
		good++
		return good < 3, nil
	}}
	o := newOrch(t)
	if err := o.Register(stepPanic, activatePanic, erring, nilWrite, healthy); err != nil {
		t.Fatal(err)
	}
	res, err := o.Run(context.Background(), "f")
	if err != nil {
		t.Fatalf("Run returned %v; worker failures must not stop the run", err)
	}
	if good != 3 || res.Rounds != 3 || res.End != orchestrator.EndQuiescent {
		t.Fatalf("healthy ran %d times over %d rounds (quiescent %v), want 3, 3, true", good, res.Rounds, res.End == orchestrator.EndQuiescent)
	}
	if len(res.Errors) != 4*3 {
		t.Fatalf("%d errors recorded, want 12: %v", len(res.Errors), res.Errors)
	}
	type key struct {
		id    string
		phase orchestrator.Phase
	}
	perWorker := map[key]int{}
	for i, we := range res.Errors {
		perWorker[key{we.WorkerID, we.Phase}]++
		if want := i/4 + 1; we.Round != want {
			t.Errorf("error %d (%s) in round %d, want %d", i, we.WorkerID, we.Round, want)
		}
		switch we.WorkerID {
		case "step-panic":
			if !errors.Is(we, orchestrator.ErrPanic) || !strings.Contains(we.Error(), "kaput") || len(we.Stack) == 0 {
				t.Errorf("step panic recorded as %v (stack %d bytes)", we, len(we.Stack))
			}
		case "activate-panic":
			if !errors.Is(we, orchestrator.ErrPanic) || !errors.Is(we, boom) {
				t.Errorf("activate panic with an error value recorded as %v", we)
			}
		case "erring":
			if errors.Is(we, orchestrator.ErrPanic) || !errors.Is(we, boom) || we.Stack != nil {
				t.Errorf("returned error recorded as %v", we)
			}
		case "nil-map":
			var re runtime.Error
			if !errors.As(we, &re) {
				t.Errorf("runtime panic not kept as a runtime.Error: %v", we)
			}
		}
	}
	want := map[key]int{
		{"step-panic", orchestrator.PhaseStep}:               3,
		{"activate-panic", orchestrator.PhaseShouldActivate}: 3,
		{"erring", orchestrator.PhaseStep}:                   3,
		{"nil-map", orchestrator.PhaseStep}:                  3,
	}
	for kk, n := range want {
		if perWorker[kk] != n {
			t.Errorf("%v recorded %d times, want %d (all: %v)", kk, perWorker[kk], n, perWorker)
		}
	}
	// Step log: the failed steps are there, producing nothing; the worker
	// that panicked in ShouldActivate never stepped.
	for _, s := range res.Steps {
		switch s.WorkerID {
		case "activate-panic":
			t.Errorf("a worker whose ShouldActivate panicked was stepped")
		case "step-panic", "erring", "nil-map":
			if s.Produced {
				t.Errorf("step %+v: a failed step produced", s)
			}
		}
	}
}

func TestContextCancelledMidRun(t *testing.T) {
	k := newKernel(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ran []string
	first := &fake{id: "first", h: k.Handle(blackboard.RoleTool, "a"), step: func(_ context.Context, sc *orchestrator.StepContext) (bool, error) {
		ran = append(ran, "first")
		if len(ran) >= 3 { // round 2
			cancel()
		}
		return true, nil
	}}
	second := &fake{id: "second", h: k.Handle(blackboard.RoleTool, "b"), step: func(context.Context, *orchestrator.StepContext) (bool, error) {
		ran = append(ran, "second")
		return true, nil
	}}
	o := newOrch(t)
	if err := o.Register(first, second); err != nil {
		t.Fatal(err)
	}
	res, err := o.Run(ctx, "c")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run error = %v, want context.Canceled", err)
	}
	if want := []string{"first", "second", "first"}; !slices.Equal(ran, want) {
		t.Fatalf("ran %v, want %v: nothing may run after cancellation", ran, want)
	}
	if res.Rounds != 2 || res.End == orchestrator.EndQuiescent || len(res.Steps) != 3 {
		t.Fatalf("result %+v: want 2 rounds, not quiescent, 3 steps", res)
	}

	// A context cancelled before the run: nothing runs.
	ran = nil
	if _, err := o.Run(ctx, "c2"); !errors.Is(err, context.Canceled) || len(ran) != 0 {
		t.Fatalf("pre-cancelled run: err %v ran %v", err, ran)
	}
}

func TestNoGoroutineLeak(t *testing.T) {
	k := newKernel(t)
	before := runtime.NumGoroutine()
	for i := range 50 {
		ctx, cancel := context.WithCancel(context.Background())
		sensor, analyst := sensorAndAnalyst(k)
		bad := &fake{id: "bad", h: k.Handle(blackboard.RoleTool, "bad"), step: func(context.Context, *orchestrator.StepContext) (bool, error) {
			panic("bad")
		}}
		quitter := &fake{id: "quitter", h: k.Handle(blackboard.RoleTool, "q"), step: func(context.Context, *orchestrator.StepContext) (bool, error) {
			if i%2 == 0 {
				cancel()
			}
			return false, nil
		}}
		o := newOrch(t)
		if err := o.Register(sensor, analyst, bad, quitter); err != nil {
			t.Fatal(err)
		}
		_, _ = o.Run(ctx, fmt.Sprintf("leak-%d", i))
		cancel()
	}
	// Goroutines of the runtime or of other tests may come and go: allow a
	// short settling period rather than demanding an exact count at once.
	after := runtime.NumGoroutine()
	for try := 0; try < 50 && after > before; try++ {
		runtime.Gosched()
		time.Sleep(10 * time.Millisecond)
		after = runtime.NumGoroutine()
	}
	if after > before {
		t.Fatalf("goroutines before %d, after %d", before, after)
	}
}

type panicky struct{ fake }

func (p *panicky) ID() string { panic("no id") }

func TestRegisterRefusesBadWorkers(t *testing.T) {
	k := newKernel(t)
	h := k.Handle(blackboard.RoleTool, "t")
	ok := &fake{id: "ok", h: h}
	cases := []struct {
		name string
		ws   []orchestrator.Worker
		want error
	}{
		{"nil worker", []orchestrator.Worker{nil}, orchestrator.ErrInvalidWorker},
		{"empty id", []orchestrator.Worker{&fake{h: h}}, orchestrator.ErrInvalidWorker},
		{"nil handle", []orchestrator.Worker{&fake{id: "x"}}, orchestrator.ErrInvalidWorker},
		{"bad read slot", []orchestrator.Worker{&fake{id: "x", h: h, reads: []blackboard.Slot{""}}}, orchestrator.ErrInvalidWorker},
		{"bad write slot", []orchestrator.Worker{&fake{id: "x", h: h, writes: []blackboard.Slot{"bogus"}}}, orchestrator.ErrInvalidWorker},
		{"panicking declaration", []orchestrator.Worker{&panicky{fake{id: "x", h: h}}}, orchestrator.ErrInvalidWorker},
		{"id already registered", []orchestrator.Worker{&fake{id: "ok", h: h}}, orchestrator.ErrInvalidWorker},
		{"id repeated in one call", []orchestrator.Worker{&fake{id: "y", h: h}, &fake{id: "y", h: h}}, orchestrator.ErrInvalidWorker},
		{"a good worker with a bad one", []orchestrator.Worker{&fake{id: "z", h: h}, nil}, orchestrator.ErrInvalidWorker},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := newOrch(t)
			if err := o.Register(ok); err != nil {
				t.Fatal(err)
			}
			err := o.Register(tc.ws...)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Register error = %v, want %v", err, tc.want)
			}
			if got := o.Order(); !slices.Equal(got, []string{"ok"}) {
				t.Fatalf("after a refused Register the workers are %v, want only [ok]", got)
			}
		})
	}
}

func TestBadOptionsAndInputs(t *testing.T) {
	for name, opt := range map[string]orchestrator.Option{
		"zero rounds":     orchestrator.WithMaxRounds(0),
		"negative rounds": orchestrator.WithMaxRounds(-3),
		"nil option":      nil,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := orchestrator.New(opt); !errors.Is(err, orchestrator.ErrInvalidOption) {
				t.Fatalf("New: %v, want ErrInvalidOption", err)
			}
			k := newKernel(t)
			ran := false
			o := newOrch(t)
			if err := o.Register(&fake{id: "w", h: k.Handle(blackboard.RoleTool, "w"), step: func(context.Context, *orchestrator.StepContext) (bool, error) {
				ran = true
				return false, nil
			}}); err != nil {
				t.Fatal(err)
			}
			if _, err := o.Run(context.Background(), "t", opt); !errors.Is(err, orchestrator.ErrInvalidOption) || ran {
				t.Fatalf("Run: err %v ran %v, want ErrInvalidOption and nothing run", err, ran)
			}
		})
	}
	if _, err := orchestrator.New(nil); !errors.Is(err, orchestrator.ErrInvalidOption) {
		t.Fatalf("New with a nil Option: %v, want ErrInvalidOption", err)
	}
	o := newOrch(t)
	if _, err := o.Run(context.Background(), ""); !errors.Is(err, blackboard.ErrInvalidInput) {
		t.Fatalf("empty trace id: %v, want blackboard.ErrInvalidInput", err)
	}
	if _, err := o.Run(context.Background(), "t", orchestrator.WithTracerProvider(nil)); !errors.Is(err, orchestrator.ErrInvalidOption) {
		t.Fatalf("a telemetry option given to Run: %v, want ErrInvalidOption", err)
	}
}

func TestViewFailureStopsTheRun(t *testing.T) {
	store := memstore.New()
	k, err := kernel.New(kernel.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	sensor, _ := sensorAndAnalyst(k)
	o := newOrch(t)
	if err := o.Register(sensor); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Run(context.Background(), "t"); !errors.Is(err, blackboard.ErrClosed) {
		t.Fatalf("Run on a closed store: %v, want blackboard.ErrClosed", err)
	}
}

func TestErrorTextNamesWorkerAndPhase(t *testing.T) {
	we := &orchestrator.Error{WorkerID: "w1", Phase: orchestrator.PhaseStep, Round: 2, Err: io.EOF}
	if got, want := we.Error(), `orchestrator: worker "w1" round 2 step: EOF`; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
}
