package kernel_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/store"
)

// The environment of a helper process of benchEpisodeProcesses.
const (
	benchHelperEnv   = "BK_STOREFLOW_BENCH_HELPER" // the helper's number
	benchEpisodesEnv = "BK_STOREFLOW_BENCH_EPISODES"
	benchLocationEnv = "BK_STOREFLOW_BENCH_LOCATION"
	benchRunEnv      = "BK_STOREFLOW_BENCH_RUN" // tells the runs of one benchmark apart
)

// benchEpisodeProcesses measures governed episodes ([runEpisode]) run by procs
// processes at once, each with a kernel of its own, on one shared store:
// the benchmark binary runs itself procs times, and each of those helper
// processes opens the store with open(location) and runs its share of b.N
// episodes on distinct traces from one goroutine. The time measured runs
// from releasing the helpers, once every one has opened the store, to the
// last one finishing; it reports episodes/s over all processes.
//
// The benchmark function that calls it runs again inside each helper (the
// helper is started with -test.bench naming it), where this call does the
// helper's work instead: whatever the function does before the call must
// not depend on being the parent (create the store's location, say, only
// in the parent: see [isBenchHelper]).
func benchEpisodeProcesses(b *testing.B, procs int, location string, open func(location string) (store.Store, error)) {
	if id := os.Getenv(benchHelperEnv); id != "" {
		benchHelper(b, id, open)
		return
	}
	type helper struct {
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		stdout *bufio.Reader
		stderr strings.Builder
	}
	// -test.bench takes a pattern per level of the benchmark's name.
	levels := strings.Split(b.Name(), "/")
	for i, l := range levels {
		levels[i] = "^" + regexp.QuoteMeta(l) + "$"
	}
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	helpers := make([]*helper, procs)
	for i := range helpers {
		n := b.N / procs
		if i < b.N%procs {
			n++
		}
		h := &helper{cmd: exec.Command(os.Args[0], "-test.run=^$", "-test.bench="+strings.Join(levels, "/"), "-test.benchtime=1x")}
		h.cmd.Env = append(os.Environ(), benchHelperEnv+"="+strconv.Itoa(i), benchEpisodesEnv+"="+strconv.Itoa(n), benchLocationEnv+"="+location, benchRunEnv+"="+run)
		h.cmd.Stderr = &h.stderr
		var err error
		if h.stdin, err = h.cmd.StdinPipe(); err != nil {
			b.Fatal(err)
		}
		out, err := h.cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		h.stdout = bufio.NewReader(out)
		if err := h.cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = h.cmd.Process.Kill(); _ = h.cmd.Wait() })
		helpers[i] = h
	}
	// A helper prints the benchmark header first, then "ready".
	for i, h := range helpers {
		for {
			line, err := h.stdout.ReadString('\n')
			if line == "ready\n" {
				break
			}
			if err != nil {
				b.Fatalf("helper %d did not get ready: %v; stderr:\n%s", i, err, h.stderr.String())
			}
		}
	}
	b.ResetTimer()
	start := time.Now()
	for _, h := range helpers {
		_ = h.stdin.Close()
	}
	var wg sync.WaitGroup
	errs := make([]error, procs)
	for i, h := range helpers {
		wg.Go(func() {
			rest, _ := io.ReadAll(h.stdout)
			if err := h.cmd.Wait(); err != nil || !strings.Contains(string(rest), "done\n") {
				errs[i] = fmt.Errorf("helper %d: %v\nstdout: %s\nstderr: %s", i, err, rest, h.stderr.String())
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "episodes/s")
}

// isBenchHelper reports whether the process is a helper of
// [benchEpisodeProcesses].
func isBenchHelper() bool { return os.Getenv(benchHelperEnv) != "" }

// benchHelper is a helper process: it opens the store, says "ready", waits
// for its stdin to close, runs its episodes and says "done".
func benchHelper(b *testing.B, id string, open func(location string) (store.Store, error)) {
	n, err := strconv.Atoi(os.Getenv(benchEpisodesEnv))
	if err != nil {
		b.Fatalf("helper %s: %s: %v", id, benchEpisodesEnv, err)
	}
	s, err := open(os.Getenv(benchLocationEnv))
	if err != nil {
		b.Fatalf("helper %s: open: %v", id, err)
	}
	defer s.Close()
	k, err := kernel.New(kernel.Config{Store: s})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	prefix := "proc-" + os.Getenv(benchRunEnv) + "-" + id + "-"
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	for i := range n {
		if _, err := runEpisode(ctx, k, prefix+strconv.Itoa(i), i%10 == 0); err != nil {
			b.Fatalf("helper %s: episode %d: %v", id, i, err)
		}
	}
	fmt.Println("done")
}
