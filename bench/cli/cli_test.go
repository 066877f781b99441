package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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
	o, err := parse(nil, noEnv, &bytes.Buffer{}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.cfg.Seeds != 50 || o.cfg.Rates != perturb.DefaultRates() || o.out != "results.jsonl" || o.store != "memory" ||
		o.cfg.Tasks != nil || o.cfg.Agents != nil || o.cfg.LLM.Enabled() {
		t.Errorf("defaults: %+v", o)
	}
	env := envOf(map[string]string{"BK_LLM_URL": "http://env/v1", "BK_LLM_MODEL": "m-env", "BK_LLM_API_KEY": "k-env"})
	o, err = parse([]string{"--llm-model", "m-flag", "--stale", "0.2", "--tool-drop", "0", "--tasks", " stripe_refund_clean , stripe_refund_stale"}, env, &bytes.Buffer{}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.cfg.LLM.URL != "http://env/v1" || o.cfg.LLM.Model != "m-flag" || o.cfg.LLM.APIKey != "k-env" {
		t.Errorf("LLM from env and flags: %v", o.cfg.LLM)
	}
	if o.cfg.Rates.Stale != 0.2 || o.cfg.Rates.Drop != 0 || len(o.cfg.Tasks) != 2 || o.cfg.Tasks[1] != "stripe_refund_stale" {
		t.Errorf("rates %+v tasks %q", o.cfg.Rates, o.cfg.Tasks)
	}
	o, err = parse([]string{"--llm-api-key", "k-flag"}, env, &bytes.Buffer{}, &bytes.Buffer{})
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
		{"store", []string{"--store", "mysql"}, nil, ErrUsage, "memory, sqlite or postgres"},
		{"sqlite without db", []string{"--store", "sqlite"}, nil, ErrUsage, "--db"},
		{"db with the memory store", []string{"--store", "memory", "--db", "x.db"}, nil, ErrUsage, "--store sqlite"},
		{"postgres without dsn", []string{"--store", "postgres"}, nil, ErrUsage, "--store postgres needs --dsn"},
		{"dsn with the memory store", []string{"--store", "memory", "--dsn", "postgres://127.0.0.1/bk"}, nil, ErrUsage, "--dsn is for --store postgres"},
		{"dsn alone", []string{"--dsn", "postgres://127.0.0.1/bk"}, nil, ErrUsage, "--dsn is for --store postgres"},
		{"db with the postgres store", []string{"--store", "postgres", "--dsn", "postgres://127.0.0.1/bk", "--db", "x.db"}, nil, ErrUsage, "--db is for --store sqlite"},
		{"dsn with the sqlite store", []string{"--store", "sqlite", "--db", "x.db", "--dsn", "postgres://127.0.0.1/bk"}, nil, ErrUsage, "--dsn is for --store postgres"},
		{"seed below zero", []string{"--seed", "-1"}, nil, study.ErrInvalidConfig, "first seed"},
		{"out in a missing directory", []string{"--out", "/nonexistent/dir/r.jsonl"}, nil, ErrUsage, "directory /nonexistent/dir does not exist"},
		{"report in a missing directory", []string{"--report", "/nonexistent/dir/r.md"}, nil, ErrUsage, "--report /nonexistent/dir/r.md"},
		{"database in a missing directory", []string{"--db", "/nonexistent/dir/bk.db"}, nil, ErrUsage, "--db /nonexistent/dir/bk.db"},
		{"profile in a missing directory", []string{"--memprofile", "/nonexistent/dir/mem.out"}, nil, ErrUsage, "--memprofile"},
		{"report into a directory", []string{"--report", os.TempDir()}, nil, ErrUsage, "is a directory"},
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
			dir := t.TempDir()
			out := filepath.Join(dir, "r.jsonl")
			_, stderr, err := run(t, envOf(c.env), append([]string{"--out", out}, c.args...)...)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) {
				t.Fatalf("Run = %v, want %v mentioning %q", err, c.want, c.text)
			}
			if entries, _ := os.ReadDir(dir); len(entries) > 0 {
				t.Errorf("files created although the run was refused: %v", entries)
			}
			if strings.Contains(stderr, "episodes/s") {
				t.Errorf("the run started: %s", stderr)
			}
		})
	}
}

// TestHelp: -h prints the usage to stdout (nothing to stderr); a bad flag
// prints the error and the usage to stderr.
func TestHelp(t *testing.T) {
	stdout, stderr, err := run(t, noEnv, "-h")
	if !errors.Is(err, flag.ErrHelp) || !strings.Contains(stdout, "-llm-url") || !strings.Contains(stdout, "BK_LLM_URL") ||
		!strings.Contains(stdout, "-scoring") || stderr != "" {
		t.Fatalf("help: %v\nstdout %s\nstderr %s", err, stdout, stderr)
	}
	stdout, stderr, err = run(t, noEnv, "--bogus")
	if !errors.Is(err, ErrUsage) || stdout != "" || !strings.Contains(stderr, "-bogus") || !strings.Contains(stderr, "usage: bench") {
		t.Fatalf("bad flag: %v\nstdout %s\nstderr %s", err, stdout, stderr)
	}
}

// TestUnreachableEndpoint: with llm_bk and an endpoint that cannot answer
// (nothing listens; or every request fails) the run fails at once with
// study.ErrEndpoint, plays no episode, and leaves an earlier results file
// as it was and no other file behind.
func TestUnreachableEndpoint(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close() // nothing listens there now
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusServiceUnavailable)
	}))
	defer failing.Close()
	for _, url := range []string{deadURL, failing.URL} {
		dir := t.TempDir()
		out := filepath.Join(dir, "results.jsonl")
		os.WriteFile(out, []byte("earlier\n"), 0o644)
		start := time.Now()
		stdout, stderr, err := run(t, noEnv, "--seeds", "1", "--llm-url", url, "--llm-model", "m", "--out", out, "--report", filepath.Join(dir, "r.md"))
		if !errors.Is(err, study.ErrEndpoint) || !strings.Contains(err.Error(), url) {
			t.Errorf("%s: Run = %v, want study.ErrEndpoint naming the endpoint", url, err)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("%s: failed after %v, not at once", url, took)
		}
		if stdout != "" || strings.Contains(stderr, "episodes") {
			t.Errorf("%s: the run started:\nstdout %s\nstderr %s", url, stdout, stderr)
		}
		b, _ := os.ReadFile(out)
		entries, _ := os.ReadDir(dir)
		if string(b) != "earlier\n" || len(entries) != 1 {
			t.Errorf("%s: results %q, files %v", url, b, entries)
		}
	}
}

// TestScoringFlag: --scoring paper reaches the study (the paper's
// string_glue row) and the report says which scoring ran; an unknown
// scoring is refused before anything runs.
func TestScoringFlag(t *testing.T) {
	report := filepath.Join(t.TempDir(), "r.md")
	stdout, _, err := run(t, noEnv, "--scoring", "paper", "--agents", "string_glue", "--out", "", "--report", report)
	if err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(report)
	if !strings.Contains(stdout, "0.613") || !strings.Contains(stdout, "--scoring paper") || !strings.Contains(string(md), "scoring paper") {
		t.Errorf("stdout:\n%s\nreport:\n%s", stdout, md)
	}
	if _, _, err := run(t, noEnv, "--scoring", "vibes", "--out", ""); !errors.Is(err, study.ErrInvalidConfig) {
		t.Errorf("--scoring vibes: %v", err)
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

// The summary says what the figures mean, why llm_bk did not run and which
// files were written, and ends with wall and CPU time.
func TestSummaryExplainsItself(t *testing.T) {
	dir := t.TempDir()
	out, report := filepath.Join(dir, "r.jsonl"), filepath.Join(dir, "r.md")
	stdout, _, err := run(t, noEnv, "--seeds", "1", "--out", out, "--report", report)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"traceability          share of the actions carried out",
		"failure transparency  acted correctly, or stopped and gave a reason code",
		"llm_bk was skipped: no LLM endpoint is configured (set --llm-url or BK_LLM_URL",
		"Wrote " + out + ": 18 JSON lines, one per episode.",
		"Wrote " + report + ": the markdown report.",
		"18 episodes in ", " CPU (study ",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	md, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(md, []byte("## What the figures mean")) {
		t.Errorf("the report does not explain the figures:\n%s", md)
	}
	env := envOf(map[string]string{"BK_LLM_URL": "http://localhost:1/v1"})
	stdout, _, err = run(t, env, "--seeds", "1", "--agents", "bk", "--out", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"llm_bk was skipped: an LLM endpoint is configured, but --agents does not name llm_bk.", `No JSON lines written (--out "")`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
}

// A run that fails leaves an earlier results file as it was, and no
// temporary file behind; a run that succeeds replaces it, keeping its mode.
func TestFailedRunKeepsEarlierResults(t *testing.T) {
	dir := t.TempDir()
	out, report := filepath.Join(dir, "results.jsonl"), filepath.Join(dir, "report.md")
	for _, p := range []string{out, report} {
		if err := os.WriteFile(p, []byte("earlier run\n"), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Run(ctx, []string{"--seeds", "5", "--out", out, "--report", report}, noEnv, io.Discard, io.Discard)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want cancelled", err)
	}
	for _, p := range []string{out, report} {
		if b, err := os.ReadFile(p); err != nil || string(b) != "earlier run\n" {
			t.Errorf("%s after a failed run: %q, %v", p, b, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("files left behind: %v", entries)
	}
	if _, _, err := run(t, noEnv, "--seeds", "1", "--out", out); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(out)
	if err != nil || fi.Size() < 100 || fi.Mode().Perm() != 0o640 {
		t.Errorf("results after a good run: %v, %v", fi, err)
	}
}

// Two outputs naming one file are refused before anything runs.
func TestOneFileForTwoOutputs(t *testing.T) {
	p := filepath.Join(t.TempDir(), "same")
	if _, _, err := run(t, noEnv, "--out", p, "--report", p); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "same file") {
		t.Fatalf("Run = %v", err)
	}
}

// An error about the database names its file.
func TestDatabaseErrorsNameThePath(t *testing.T) {
	db := filepath.Join(t.TempDir(), "not-a.db")
	if err := os.WriteFile(db, bytes.Repeat([]byte("this is not SQLite\n"), 100), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := run(t, noEnv, "--seeds", "1", "--out", "", "--db", db)
	if err == nil || !strings.Contains(err.Error(), db) {
		t.Fatalf("Run = %v, want an error naming %s", err, db)
	}
}

// --seed, --store and --db mean what they mean in the examples: the first
// seed, and a SQLite file that --db alone selects.
func TestSharedFlags(t *testing.T) {
	dir := t.TempDir()
	out, db := filepath.Join(dir, "r.jsonl"), filepath.Join(dir, "bk.db")
	stdout, _, err := run(t, noEnv, "--seed", "7", "--seeds", "2", "--tasks", "stripe_refund_clean", "--agents", "bk", "--out", out, "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for i, seed := range []string{`"seed":7,`, `"seed":8,`} {
		if l := bytes.Split(lines, []byte("\n"))[i]; !bytes.Contains(l, []byte(seed)) {
			t.Errorf("line %d: %s, want %s", i, l, seed)
		}
	}
	if !strings.Contains(stdout, "Episodes stored in the database "+db) {
		t.Errorf("stdout:\n%s", stdout)
	}
	if fi, err := os.Stat(db); err != nil || fi.Size() == 0 {
		t.Errorf("--db alone did not select SQLite: %v", err)
	}
	for _, c := range []struct{ store, db, want string }{
		{"", "", "memory"}, {"", "x.db", "sqlite"}, {"memory", "", "memory"}, {"sqlite", "x.db", "sqlite"},
	} {
		if got, err := storeKind(c.store, c.db, ""); got != c.want || err != nil {
			t.Errorf("storeKind(%q, %q) = %q, %v", c.store, c.db, got, err)
		}
	}
	if got, err := storeKind("postgres", "", "postgres://127.0.0.1/bk"); got != "postgres" || err != nil {
		t.Errorf("storeKind(postgres) = %q, %v", got, err)
	}
}

// TestStepsFlag: the report's traces are not numbered by default; --steps
// numbers them t0, t1, … as the paper prints its traces.
func TestStepsFlag(t *testing.T) {
	dir := t.TempDir()
	for _, steps := range []bool{false, true} {
		report := filepath.Join(dir, fmt.Sprintf("r-%v.md", steps))
		args := []string{"--seeds", "1", "--tasks", "stripe_refund_clean", "--agents", "bk,string_glue", "--out", "", "--report", report}
		if steps {
			args = append(args, "--steps")
		}
		if _, _, err := run(t, noEnv, args...); err != nil {
			t.Fatal(err)
		}
		md, _ := os.ReadFile(report)
		numbered := regexp.MustCompile("(?m)^t[01] percepts.charge committed").Match(md) && regexp.MustCompile("(?m)^t0 tool.charge returned").Match(md)
		plain := regexp.MustCompile("(?m)^percepts.charge committed").Match(md) && regexp.MustCompile("(?m)^tool.charge returned").Match(md)
		if numbered != steps || plain == steps {
			t.Errorf("--steps %v: report traces:\n%s", steps, md)
		}
	}
}

// TestEndpointFailsDuringRun: an endpoint that answers the check and then
// nothing usable fails the run when every llm_bk episode ended in
// LLM_ERROR (nothing written); when only some did, the run succeeds and
// says how many.
func TestEndpointFailsDuringRun(t *testing.T) {
	serve := func(usable func(body string) bool) *httptest.Server {
		var mu sync.Mutex
		first := true
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			ok := first || usable(string(b))
			first = false
			mu.Unlock()
			content := `I would rather not say.`
			if ok {
				content = `{\"propose\": true, \"reason\": \"ok\"}`
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"`+content+`"}}]}`)
		}))
	}
	never := serve(func(string) bool { return false })
	defer never.Close()
	dir := t.TempDir()
	out := filepath.Join(dir, "results.jsonl")
	os.WriteFile(out, []byte("earlier\n"), 0o644)
	stdout, _, err := run(t, noEnv, "--seeds", "1", "--llm-url", never.URL, "--llm-model", "m", "--out", out)
	if !errors.Is(err, study.ErrEndpoint) || !strings.Contains(err.Error(), "every llm_bk episode (6)") || stdout != "" {
		t.Errorf("endpoint gone after the check: Run = %v\n%s", err, stdout)
	}
	if b, _ := os.ReadFile(out); string(b) != "earlier\n" {
		t.Errorf("results overwritten: %q", b)
	}

	// No usable answer about one task's charge: that task's episodes end
	// in LLM_ERROR, the others do not.
	some := serve(func(body string) bool { return !strings.Contains(body, "ch_3P0x1A2B3C") })
	defer some.Close()
	stdout, _, err = run(t, noEnv, "--seeds", "2", "--llm-url", some.URL, "--llm-model", "m", "--out", "")
	if err != nil || !strings.Contains(stdout, "llm_bk: 2 of 12 episodes ended in LLM_ERROR") {
		t.Errorf("some LLM_ERROR: Run = %v\n%s", err, stdout)
	}
}
