package study

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/bench/perturb"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/store/memstore"
)

// BenchmarkStudy runs the study, JSON lines included (to io.Discard), and
// reports the cost of one episode: the paper's 300 episodes per agent, and
// the 18,000-episode bk run of the speed target (`go run ./bench --seeds
// 3000 --agents bk`), serially and on two goroutines.
func BenchmarkStudy(b *testing.B) {
	for _, c := range []struct {
		name            string
		agent           string
		seeds, parallel int
	}{
		{AgentStringGlue, AgentStringGlue, 50, 1},
		{AgentJSONGlue, AgentJSONGlue, 50, 1},
		{AgentBK, AgentBK, 50, 1},
		{AgentAdversarialBK, AgentAdversarialBK, 50, 1},
		{"bk-18000", AgentBK, 3000, 1},
		{"bk-18000-parallel-2", AgentBK, 3000, 2},
	} {
		b.Run(c.name, func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.Agents = []string{c.agent}
			cfg.Seeds, cfg.Parallel = c.seeds, c.parallel
			b.ReportAllocs()
			episodes := 0
			cpu0, cpuOK := cpuTime()
			for b.Loop() {
				sum, err := Run(context.Background(), cfg, io.Discard)
				if err != nil {
					b.Fatal(err)
				}
				episodes += sum.Episodes
			}
			report(b, episodes, cpu0, cpuOK)
		})
	}
}

// BenchmarkKernelFloor is the part of the 18,000-episode bk run that only
// the kernel can make cheaper: per episode a kernel on a fresh memory
// store, the owner's constraint and percept, and the planner's belief,
// plan and refund or fallback, each decided by the kernel. It leaves out
// what the harness adds (drawing the faults, executing the committed
// actions, measuring, the view, encoding), so BenchmarkStudy/bk-18000
// minus this is the harness's share.
func BenchmarkKernelFloor(b *testing.B) {
	ctx := context.Background()
	cfg := DefaultConfig()
	cfg.Seeds = 3000
	cfg.Agents = []string{AgentBK}
	p, err := cfg.plan()
	if err != nil {
		b.Fatal(err)
	}
	// The faults are drawn beforehand, into memory the garbage collector
	// need not scan; only the episodes' trace ids are built in the loop.
	faults := make([]perturb.Flags, 0, len(p.tasks)*p.seeds)
	for ti := range p.tasks {
		for seed := range p.seeds {
			faults = append(faults, cfg.Rates.Draw(seed, p.tasks[ti].Key()))
		}
	}
	a := p.agents[0].(*kernelAgent)
	b.ReportAllocs()
	episodes := 0
	cpu0, cpuOK := cpuTime()
	for b.Loop() {
		for u, f := range faults {
			t := &p.tasks[u/p.seeds]
			ep := Episode{Task: t, Seed: u % p.seeds, Faults: f, TraceID: traceID("", a.name, t.ID, u%p.seeds), payloads: p.payloads[u/p.seeds]}
			st := memstore.New()
			k, err := kernel.New(kernel.Config{Store: st})
			if err != nil {
				b.Fatal(err)
			}
			planner := k.Proposer(blackboard.RolePlanner, a.plannerName)
			if _, _, err := a.play(ctx, k, planner, ep, world{}, st); err != nil {
				b.Fatal(err)
			}
			k.Close()
			st.Close()
		}
		episodes += len(faults)
	}
	report(b, episodes, cpu0, cpuOK)
}

// report adds ns/episode and, where the system measures it, the process's
// CPU time per episode (both cores' work: the garbage collector runs beside
// the benchmark).
func report(b *testing.B, episodes int, cpu0 time.Duration, cpuOK bool) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(episodes), "ns/episode")
	if cpu1, ok := cpuTime(); ok && cpuOK {
		b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(episodes), "cpu-ns/episode")
	}
}
