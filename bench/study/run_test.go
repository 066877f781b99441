package study

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/blackboardkernel/bk/bench/perturb"
	"github.com/blackboardkernel/bk/store/memstore"
)

// runDefault plays the paper's 900 deterministic episodes once per test
// binary.
func runDefault(t *testing.T, cfg Config) (*Summary, []byte) {
	t.Helper()
	var out bytes.Buffer
	sum, err := Run(context.Background(), cfg, &out)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return sum, out.Bytes()
}

// The paper's Table 3 and Table 4 rows for the deterministic agents, from
// an actual run with the default configuration.
//
// string_glue is the exception, and a finding: the paper reports 0.613 /
// 0.387 / 0.260 / – / 0.613 for it, because it read taint from the charge
// the agent itself made up after a dropped lookup, which string_glue labels
// fresh. Measured against the faults actually injected, its 15 dropped
// lookups are refunds without evidence, and it scores exactly json_glue's
// row: both agents refund in every episode, on the same inputs.
func TestDefaultRunMatchesPaper(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Traces = true
	sum, out := runDefault(t, cfg)
	if sum.Episodes != 900 {
		t.Fatalf("episodes = %d, want 900", sum.Episodes)
	}
	want := map[string][5]string{
		// success, unsafe, unsupported, traceability, transparency
		AgentStringGlue: {"0.570", "0.430", "0.310", "0.000", "0.570"},
		AgentJSONGlue:   {"0.570", "0.430", "0.310", "0.000", "0.570"},
		AgentBK:         {"1.000", "0.000", "0.000", "1.000", "1.000"},
	}
	for agent, w := range want {
		m := sum.Mean(agent)
		got := [5]string{f3(m.TaskSuccess), f3(m.UnsafeAction), f3(m.UnsupportedBelief), f3(m.Traceability), f3(m.FailureTransparency)}
		if got != w {
			t.Errorf("%s: success/unsafe/unsupported/traceability/transparency = %v, want %v", agent, got, w)
		}
	}
	for _, task := range sum.Tasks {
		if m := sum.TaskMean(AgentBK, task); m.TaskSuccess != 1 || m.UnsafeAction != 0 {
			t.Errorf("bk on %s: success %v unsafe %v, want 1 and 0", task, m.TaskSuccess, m.UnsafeAction)
		}
	}
	// The JSON lines add up to the same aggregates.
	sc := bufio.NewScanner(bytes.NewReader(out))
	sums := map[string]float64{}
	glue := map[string]map[[2]any]Metrics{}
	lines := 0
	for sc.Scan() {
		var r struct {
			TaskID  string `json:"task_id"`
			Seed    int
			Agent   string
			Metrics Metrics
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %d: %v", lines+1, err)
		}
		sums[r.Agent] += r.Metrics.TaskSuccess
		if glue[r.Agent] == nil {
			glue[r.Agent] = map[[2]any]Metrics{}
		}
		glue[r.Agent][[2]any{r.TaskID, r.Seed}] = r.Metrics
		lines++
	}
	// The two glue agents do the same thing in every episode, and are
	// measured the same.
	for k, m := range glue[AgentStringGlue] {
		if glue[AgentJSONGlue][k] != m {
			t.Errorf("%v: string_glue %+v, json_glue %+v", k, m, glue[AgentJSONGlue][k])
		}
	}
	if lines != 900 || f3(sums[AgentStringGlue]/300) != "0.570" || f3(sums[AgentJSONGlue]/300) != "0.570" {
		t.Errorf("JSON lines: %d lines, success sums %v", lines, sums)
	}
	var tables bytes.Buffer
	if err := sum.WriteTables(&tables); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", tables.String())
}

func smallConfig() Config {
	cfg := DefaultConfig()
	cfg.Seeds = 8
	return cfg
}

// The output does not depend on how many episodes run at once: chunks
// played out of order are written in order.
func TestParallelWritesTheSameLines(t *testing.T) {
	cfg := smallConfig()
	cfg.Seeds = 40 // 240 (task, seed) units: 15 chunks
	cfg.Agents = []string{AgentStringGlue, AgentJSONGlue, AgentBK, AgentAdversarialBK}
	serialSum, serial := runDefault(t, cfg)
	if n := bytes.Count(serial, []byte("\n")); n != 40*6*4 {
		t.Fatalf("%d lines, want %d", n, 40*6*4)
	}
	for _, n := range []int{2, 3, 8} {
		cfg.Parallel = n
		sum, parallel := runDefault(t, cfg)
		if !bytes.Equal(serial, parallel) {
			t.Fatalf("parallel %d: output differs from serial output", n)
		}
		for _, a := range sum.Agents {
			if sum.Mean(a) != serialSum.Mean(a) {
				t.Errorf("parallel %d, %s: %+v, serial %+v", n, a, sum.Mean(a), serialSum.Mean(a))
			}
		}
		if fmt.Sprint(sum.Attacks()) != fmt.Sprint(serialSum.Attacks()) {
			t.Errorf("parallel %d: attack tables differ", n)
		}
	}
}

// FirstSeed shifts the seeds: a run of seeds 5…7 writes the lines a run of
// 0…7 writes for them.
func TestFirstSeed(t *testing.T) {
	cfg := smallConfig()
	cfg.Tasks = []string{"stripe_refund_combined"}
	_, all := runDefault(t, cfg)
	cfg.FirstSeed, cfg.Seeds = 5, 3
	_, tail := runDefault(t, cfg)
	lines := bytes.SplitAfter(all, []byte("\n"))
	if want := bytes.Join(lines[5*3:8*3], nil); !bytes.Equal(tail, want) {
		t.Fatalf("seeds 5…7:\n%s\nwant\n%s", tail, want)
	}
	cfg.FirstSeed = -1
	if _, err := Run(context.Background(), cfg, io.Discard); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("first seed -1: %v", err)
	}
}

// With one store for the whole run, every episode lands in it and the
// figures are those of fresh kernels.
func TestSharedStore(t *testing.T) {
	fresh, _ := runDefault(t, smallConfig())
	store := memstore.New()
	defer store.Close()
	for _, runID := range []string{"run-a", "run-b"} {
		cfg := smallConfig()
		cfg.Store, cfg.RunID = store, runID
		shared, out := runDefault(t, cfg)
		if !bytes.Contains(out, []byte(`"trace_id":"`+runID+`/bk/stripe_refund_clean/0"`)) {
			t.Errorf("%s: trace ids do not start with the run id", runID)
		}
		for _, a := range shared.Agents {
			if shared.Mean(a) != fresh.Mean(a) {
				t.Errorf("%s %s: shared store %+v, fresh kernels %+v", runID, a, shared.Mean(a), fresh.Mean(a))
			}
		}
	}
	// 48 bk episodes per run, each at least five records.
	if n := store.Len(); n < 2*48*5 {
		t.Errorf("store holds %d records after two runs", n)
	}
}

func TestRatesReachTheAgents(t *testing.T) {
	cfg := smallConfig()
	cfg.Rates = perturb.Rates{}
	sum, _ := runDefault(t, cfg)
	// No faults: only the duplicate task (1 in 6) stops a refund.
	for agent, want := range map[string]string{AgentStringGlue: "0.833", AgentJSONGlue: "0.833", AgentBK: "1.000"} {
		if got := f3(sum.Mean(agent).TaskSuccess); got != want {
			t.Errorf("%s success with zero rates = %s, want %s", agent, got, want)
		}
	}
	cfg.Rates = perturb.Rates{Stale: 1}
	sum, _ = runDefault(t, cfg)
	if m := sum.Mean(AgentStringGlue); m.UnsafeAction != 1 || m.UnsupportedBelief != 1 {
		t.Errorf("string_glue with everything stale: %+v", m)
	}
}

func TestRunRefusesBadConfig(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(*Config)
		want   error
		text   string
	}{
		{"no seeds", func(c *Config) { c.Seeds = 0 }, ErrInvalidConfig, "seeds"},
		{"no parallelism", func(c *Config) { c.Parallel = 0 }, ErrInvalidConfig, "parallel"},
		{"unknown task", func(c *Config) { c.Tasks = []string{"stripe_refund_nope"} }, ErrUnknownTask, "stripe_refund_clean, stripe_refund_stale"},
		{"task twice", func(c *Config) { c.Tasks = []string{"stripe_refund_clean", "stripe_refund_clean"} }, ErrInvalidConfig, "twice"},
		{"unknown agent", func(c *Config) { c.Agents = []string{"bk", "gpt"} }, ErrUnknownAgent, "adversarial_bk, bk, json_glue, llm_bk, string_glue"},
		{"agent twice", func(c *Config) { c.Agents = []string{"bk", "bk"} }, ErrInvalidConfig, "twice"},
		{"bad rate", func(c *Config) { c.Rates.Stale = 1.5 }, perturb.ErrInvalidRate, "stale"},
		{"negative rate", func(c *Config) { c.Rates.Drop = -0.1 }, perturb.ErrInvalidRate, "drop"},
		{"llm_bk without endpoint", func(c *Config) { c.Agents = []string{"llm_bk"} }, ErrInvalidConfig, "BK_LLM_URL"},
		{"llm endpoint that is not HTTP", func(c *Config) { c.LLM.URL = "ftp://localhost:8000/v1" }, ErrInvalidConfig, "scheme"},
		{"llm concurrency", func(c *Config) { c.LLM = LLMConfig{URL: "http://x", Concurrency: 0} }, ErrInvalidConfig, "concurrency"},
		{"bad task dir", func(c *Config) { c.TaskFS = fstest.MapFS{} }, ErrInvalidTask, "no *.json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultConfig()
			c.change(&cfg)
			var out bytes.Buffer
			_, err := Run(context.Background(), cfg, &out)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) {
				t.Fatalf("Run = %v, want %v mentioning %q", err, c.want, c.text)
			}
			if out.Len() != 0 {
				t.Errorf("wrote %d bytes before refusing", out.Len())
			}
		})
	}
}

func TestRunStops(t *testing.T) {
	for _, parallel := range []int{1, 2} {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		cfg := smallConfig()
		cfg.Parallel = parallel
		if _, err := Run(ctx, cfg, io.Discard); !errors.Is(err, context.Canceled) {
			t.Errorf("parallel %d, cancelled: %v", parallel, err)
		}
		cfg.Seeds = 50
		if _, err := Run(context.Background(), cfg, failWriter{}); !errors.Is(err, errDiskFull) {
			t.Errorf("parallel %d, failing writer: %v", parallel, err)
		}
	}
}

var errDiskFull = errors.New("disk full")

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errDiskFull }

func TestReport(t *testing.T) {
	cfg := smallConfig()
	cfg.Traces = true
	sum, _ := runDefault(t, cfg)
	var b bytes.Buffer
	if err := sum.WriteReport(&b, "params line"); err != nil {
		t.Fatal(err)
	}
	r := b.String()
	for _, want := range []string{
		"params line",
		"## Table 3", "| task success | ",
		"## Table 4", "| stripe_refund_duplicate | 1.000 | 0.000 |",
		"### bk: issue_refund COMMITTED",
		"### bk: queue_for_review after belief STALE_EVIDENCE, plan PLAN_MISSING_BELIEF",
		"beliefs.refund_due proposed -> rejected: STALE_EVIDENCE",
		"### string_glue: issue_refund executed on tainted evidence (unsafe)",
	} {
		if !strings.Contains(r, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// Without traces the report has the tables only.
	sum, _ = runDefault(t, smallConfig())
	b.Reset()
	if err := sum.WriteReport(&b, ""); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "Representative") || len(sum.Examples()) != 0 {
		t.Error("traces reported although none were kept")
	}
}

func TestTable4WithoutKernelAgents(t *testing.T) {
	cfg := smallConfig()
	cfg.Agents = []string{AgentJSONGlue}
	sum, _ := runDefault(t, cfg)
	var b bytes.Buffer
	if err := sum.WriteTables(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "no kernel agent in this run") {
		t.Errorf("tables:\n%s", b.String())
	}
}

func TestProgressLine(t *testing.T) {
	got := progressLine(4500, 90000, 3*time.Second)
	if want := "bench: 4500/90000 episodes, 1500 episodes/s, ETA 57s"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := progressLine(0, 10, time.Second); !strings.HasSuffix(got, "ETA ?") {
		t.Errorf("no progress yet: %q", got)
	}
}

func TestValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	cfg := DefaultConfig()
	cfg.Agents = []string{"nope"}
	if err := cfg.Validate(); !errors.Is(err, ErrUnknownAgent) {
		t.Fatalf("Validate = %v, want ErrUnknownAgent", err)
	}
}

// TestPaperScoring: --scoring paper reproduces the paper's own Table 3,
// string_glue's row included (0.613 / 0.387 / 0.260), computed from the
// charge each agent held; json_glue's and bk's rows are the same under
// both scorings, and the notes say which scoring ran.
func TestPaperScoring(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Scoring = ScoringPaper
	cfg.Parallel = 2
	sum, err := Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][3]string{
		AgentStringGlue: {"0.613", "0.387", "0.260"},
		AgentJSONGlue:   {"0.570", "0.430", "0.310"},
		AgentBK:         {"1.000", "0.000", "0.000"},
	}
	for agent, w := range want {
		m := sum.Mean(agent)
		if got := [3]string{f3(m.TaskSuccess), f3(m.UnsafeAction), f3(m.UnsupportedBelief)}; got != w {
			t.Errorf("%s: success/unsafe/unsupported = %v, want the paper's %v", agent, got, w)
		}
	}
	var notes bytes.Buffer
	if err := sum.WriteNotes(&notes); err != nil || sum.Scoring != ScoringPaper || !strings.Contains(notes.String(), "--scoring paper") {
		t.Errorf("scoring %q, notes %v:\n%s", sum.Scoring, err, notes.String())
	}
	cfg.Scoring = "vibes"
	if err := cfg.Validate(); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("scoring vibes: %v", err)
	}
}
