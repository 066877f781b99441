package study

import (
	"context"
	"io"
	"testing"
)

// BenchmarkStudy runs the paper's study (six tasks × 50 seeds) per agent,
// JSON lines included, and reports the cost of one episode.
func BenchmarkStudy(b *testing.B) {
	for _, agent := range []string{AgentStringGlue, AgentJSONGlue, AgentBK, AgentAdversarialBK} {
		b.Run(agent, func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.Agents = []string{agent}
			b.ReportAllocs()
			episodes := 0
			for b.Loop() {
				sum, err := Run(context.Background(), cfg, io.Discard)
				if err != nil {
					b.Fatal(err)
				}
				episodes += sum.Episodes
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(episodes), "ns/episode")
		})
	}
}
