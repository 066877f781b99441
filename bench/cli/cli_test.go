package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/blackboardkernel/bk/bench/perturb"
	"github.com/blackboardkernel/bk/bench/study"
)

func noEnv(string) string { return "" }

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func run(t *testing.T, getenv func(string) string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var o, e bytes.Buffer
	err = Run(context.Background(), args, getenv, &o, &e)
	return o.String(), e.String(), err
}

func TestRunWritesLinesTablesAndReport(t *testing.T) {
	dir := t.TempDir()
	out, report := filepath.Join(dir, "r.jsonl"), filepath.Join(dir, "r.md")
	stdout, _, err := run(t, noEnv, "--seeds", "3", "--tasks", "stripe_refund_clean,stripe_refund_duplicate",
		"--agents", "bk,string_glue", "--out", out, "--report", report)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Table 3", "Table 4", "bk success", "stripe_refund_duplicate", "12 episodes in", "episodes/s"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	lines, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(lines, []byte("\n")); n != 12 {
		t.Errorf("%d JSON lines, want 3 seeds × 2 tasks × 2 agents = 12", n)
	}
	md, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(md, []byte("## Representative traces")) || !bytes.Contains(md, []byte("store memory")) {
		t.Errorf("report:\n%s", md)
	}
}

func TestRunSQLiteStore(t *testing.T) {
	db := filepath.Join(t.TempDir(), "bk.db")
	for range 2 {
		stdout, _, err := run(t, noEnv, "--seeds", "2", "--agents", "bk", "--out", "", "--store", "sqlite", "--db", db)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(stdout, "task success          1.000") {
			t.Errorf("stdout:\n%s", stdout)
		}
	}
	if fi, err := os.Stat(db); err != nil || fi.Size() == 0 {
		t.Fatalf("database: %v", err)
	}
}

func TestParseDefaultsAndEnv(t *testing.T) {
	o, err := parse(nil, noEnv, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.cfg.Seeds != 50 || o.cfg.Rates != perturb.DefaultRates() || o.out != "results.jsonl" || o.store != "memory" ||
		o.cfg.Tasks != nil || o.cfg.Agents != nil || o.cfg.LLM.Enabled() {
		t.Errorf("defaults: %+v", o)
	}
	env := envOf(map[string]string{"BK_LLM_URL": "http://env/v1", "BK_LLM_MODEL": "m-env", "BK_LLM_API_KEY": "k-env"})
	o, err = parse([]string{"--llm-model", "m-flag", "--stale", "0.2", "--tool-drop", "0", "--tasks", " stripe_refund_clean , stripe_refund_stale"}, env, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.cfg.LLM.URL != "http://env/v1" || o.cfg.LLM.Model != "m-flag" || o.cfg.LLM.APIKey != "k-env" {
		t.Errorf("LLM from env and flags: %v", o.cfg.LLM)
	}
	if o.cfg.Rates.Stale != 0.2 || o.cfg.Rates.Drop != 0 || len(o.cfg.Tasks) != 2 || o.cfg.Tasks[1] != "stripe_refund_stale" {
		t.Errorf("rates %+v tasks %q", o.cfg.Rates, o.cfg.Tasks)
	}
	o, err = parse([]string{"--llm-api-key", "k-flag"}, env, &bytes.Buffer{})
	if err != nil || o.cfg.LLM.APIKey != "k-flag" {
		t.Errorf("flag key does not override env: %v %v", o.cfg.LLM, err)
	}
}

func TestRunRefusesBadInput(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		env  map[string]string
		want error
		text string
	}{
		{"not a number", []string{"--seeds", "many"}, nil, ErrUsage, "seeds"},
		{"unknown flag", []string{"--episodes", "3"}, nil, ErrUsage, "episodes"},
		{"argument", []string{"extra"}, nil, ErrUsage, "extra"},
		{"empty list item", []string{"--agents", "bk,,json_glue"}, nil, ErrUsage, "empty item"},
		{"store", []string{"--store", "postgres"}, nil, ErrUsage, "memory, sqlite"},
		{"sqlite without db", []string{"--store", "sqlite"}, nil, ErrUsage, "--db"},
		{"db without sqlite", []string{"--db", "x.db"}, nil, ErrUsage, "--store sqlite"},
		{"llm concurrency", []string{"--llm-concurrency", "0"}, nil, ErrUsage, "llm-concurrency"},
		{"zero seeds", []string{"--seeds", "0"}, nil, study.ErrInvalidConfig, "seeds"},
		{"rate above one", []string{"--conflict", "1.2"}, nil, perturb.ErrInvalidRate, "conflict"},
		{"negative rate", []string{"--low-confidence", "-0.5"}, nil, perturb.ErrInvalidRate, "low confidence"},
		{"unknown task", []string{"--tasks", "stripe_refund_clean,paypal"}, nil, study.ErrUnknownTask, "valid: stripe_refund_clean"},
		{"unknown agent", []string{"--agents", "bk,gpt4"}, nil, study.ErrUnknownAgent, "valid: adversarial_bk, bk, json_glue, llm_bk, string_glue"},
		{"missing task dir", []string{"--task-dir", "/nonexistent/tasks"}, nil, study.ErrInvalidTask, "no *.json"},
		{"llm endpoint from env", nil, map[string]string{"BK_LLM_URL": "localhost:11434"}, study.ErrInvalidConfig, "llm_bk"},
		{"llm endpoint from flag", []string{"--llm-url", "ftp://localhost:8000/v1"}, nil, study.ErrInvalidConfig, "scheme"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "r.jsonl")
			_, _, err := run(t, envOf(c.env), append([]string{"--out", out}, c.args...)...)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) {
				t.Fatalf("Run = %v, want %v mentioning %q", err, c.want, c.text)
			}
			if _, statErr := os.Stat(out); statErr == nil {
				t.Error("results file created although the run was refused")
			}
		})
	}
}

func TestHelp(t *testing.T) {
	_, stderr, err := run(t, noEnv, "-h")
	if !errors.Is(err, flag.ErrHelp) || !strings.Contains(stderr, "-llm-url") || !strings.Contains(stderr, "BK_LLM_URL") {
		t.Fatalf("help: %v\n%s", err, stderr)
	}
}

// fakeModel is an OpenAI-compatible endpoint that always says yes and
// records the Authorization headers it receives.
func fakeModel(t *testing.T) (*httptest.Server, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"{\"propose\": true, \"reason\": \"ok\"}"}}]}`)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), auth...)
	}
}

// With an endpoint, llm_bk joins the default agents; its key reaches the
// server and nothing else.
func TestLLMRunKeyNeverPrinted(t *testing.T) {
	srv, auth := fakeModel(t)
	dir := t.TempDir()
	out, report := filepath.Join(dir, "r.jsonl"), filepath.Join(dir, "r.md")
	stdout, stderr, err := run(t, envOf(map[string]string{"BK_LLM_URL": srv.URL + "/v1"}),
		"--seeds", "1", "--llm-api-key", "sk-very-secret", "--llm-model", "m", "--out", out, "--report", report)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, "llm_bk success") || !strings.Contains(stdout, "24 episodes in") {
		t.Errorf("stdout:\n%s", stdout)
	}
	got := auth()
	if len(got) == 0 || slices.ContainsFunc(got, func(h string) bool { return h != "Bearer sk-very-secret" }) {
		t.Errorf("Authorization headers %q", got)
	}
	lines, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{stdout, stderr, string(lines), string(md)} {
		if strings.Contains(s, "sk-very-secret") {
			t.Fatal("the API key was printed")
		}
	}
	// A configuration error does not print it either.
	_, _, err = run(t, noEnv, "--llm-url", "ftp://x", "--llm-api-key", "sk-very-secret")
	if err == nil || strings.Contains(err.Error(), "sk-very-secret") {
		t.Fatalf("Run = %v", err)
	}
}

// adversarial_bk prints its attack table and puts it in the report.
func TestAdversarialTable(t *testing.T) {
	report := filepath.Join(t.TempDir(), "r.md")
	stdout, _, err := run(t, noEnv, "--seeds", "2", "--agents", "adversarial_bk", "--out", "", "--report", report)
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{stdout, string(md)} {
		for _, want := range []string{"Attacks on the hardened kernel", "retry_rejected_belief", "forged_dependencies", "total"} {
			if !strings.Contains(s, want) {
				t.Errorf("output lacks %q:\n%s", want, s)
			}
		}
	}
}

func TestProfiles(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "mem.pprof")
	if _, _, err := run(t, noEnv, "--seeds", "2", "--out", "", "--cpuprofile", cpu, "--memprofile", mem); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{cpu, mem} {
		if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
			t.Errorf("profile %s: %v", p, err)
		}
	}
}
