package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// BenchmarkBench is `go run ./bench --seeds 3000 --agents bk` (18,000
// episodes, JSON lines written to a file), serially and with --parallel 2,
// under the program's garbage-collector setting, and logs the bench's own
// timing line (wall and CPU time) of each run.
func BenchmarkBench(b *testing.B) {
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(GCPercent))
	}
	for _, parallel := range []string{"1", "2"} {
		b.Run("bk-18000-parallel-"+parallel, func(b *testing.B) {
			out := filepath.Join(b.TempDir(), "results.jsonl")
			args := []string{"--seeds", "3000", "--agents", "bk", "--parallel", parallel, "--out", out}
			for b.Loop() {
				var stdout bytes.Buffer
				if err := Run(context.Background(), args, noEnv, &stdout, io.Discard); err != nil {
					b.Fatal(err)
				}
				lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
				b.Log(lines[len(lines)-1])
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(18000*b.N), "ns/episode")
		})
	}
}
