package study

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/worker/llm"
)

// fakeLLM is an in-process OpenAI-compatible chat completions server. The
// script answers each request with an HTTP status and, for 200, the
// assistant's message; plan says whether the question is about the plan
// (it names the plan kind) rather than the belief.
type fakeLLM struct {
	*httptest.Server
	script func(plan bool) (status int, content string)

	mu                    sync.Mutex
	beliefs, plans        int // requests about each
	inFlight, maxInFlight int
	auth, models          map[string]int
}

func newFakeLLM(t *testing.T, script func(plan bool) (int, string)) *fakeLLM {
	t.Helper()
	f := &fakeLLM{script: script, auth: map[string]int{}, models: map[string]int{}}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

// defaultRetries is worker/llm's default retry count: a request is made
// once and retried three times.
const defaultRetries = 3

func (f *fakeLLM) serve(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil || len(req.Messages) == 0 {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	plan := strings.Contains(req.Messages[len(req.Messages)-1].Content, kindPlan)
	f.mu.Lock()
	f.inFlight++
	f.maxInFlight = max(f.maxInFlight, f.inFlight)
	if plan {
		f.plans++
	} else {
		f.beliefs++
	}
	f.auth[r.Header.Get("Authorization")]++
	f.models[req.Model]++
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inFlight--
		f.mu.Unlock()
	}()

	status, content := f.script(plan)
	w.Header().Set("Content-Type", "application/json")
	if status != http.StatusOK {
		w.Header().Set("Retry-After", "0") // retry at once: no test waits
		w.WriteHeader(status)
		fmt.Fprint(w, `{"error":{"message":"overloaded"}}`)
		return
	}
	json.NewEncoder(w).Encode(map[string]any{
		"object":  "chat.completion",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": content}}},
	})
}

// counts returns the requests about beliefs and plans, and the most that
// were in flight at once.
func (f *fakeLLM) counts() (beliefs, plans, maxInFlight int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.beliefs, f.plans, f.maxInFlight
}

const (
	yes = `{"propose": true, "reason": "the charge is disputed"}`
	no  = `{"propose": false, "reason": "not convinced"}`
)

// llmLine is what the tests read back from a JSON line.
type llmLine struct {
	TaskID  string `json:"task_id"`
	Seed    int
	Agent   string
	Output  KernelOutput
	Metrics Metrics
}

// runLLM runs llm_bk and bk side by side against the fake server.
func runLLM(t *testing.T, f *fakeLLM, seeds int) (*Summary, map[string][]llmLine) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Seeds, cfg.Parallel = seeds, 2
	cfg.Agents = []string{AgentBK, AgentLLMBK}
	cfg.LLM = LLMConfig{URL: f.URL + "/v1", Model: "fake-model", APIKey: "sk-fake", Concurrency: 3}
	var out bytes.Buffer
	sum, err := Run(context.Background(), cfg, &out)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	lines := map[string][]llmLine{}
	dec := json.NewDecoder(&out)
	for dec.More() {
		var l llmLine
		if err := dec.Decode(&l); err != nil {
			t.Fatal(err)
		}
		lines[l.Agent] = append(lines[l.Agent], l)
	}
	if len(lines[AgentLLMBK]) != 6*seeds || len(lines[AgentBK]) != 6*seeds {
		t.Fatalf("%d llm_bk and %d bk lines, want %d each", len(lines[AgentLLMBK]), len(lines[AgentBK]), 6*seeds)
	}
	_, _, most := f.counts()
	if most > cfg.LLM.Concurrency {
		t.Errorf("%d model calls in flight at once, --llm-concurrency is %d", most, cfg.LLM.Concurrency)
	}
	if f.auth["Bearer sk-fake"] == 0 || len(f.auth) != 1 || f.models["fake-model"] == 0 || len(f.models) != 1 {
		t.Errorf("requests carried auth %v, models %v", f.auth, f.models)
	}
	return sum, lines
}

// llm_bk end to end against an OpenAI-compatible server that always says
// yes, always says no, says no to the plan only, fails, or answers
// nonsense: never an unsafe action, every stop ends in the safe fallback
// with its code, and every decision stays traceable.
func TestLLMBKEndToEnd(t *testing.T) {
	const seeds = 3
	episodes := 6 * seeds
	for _, c := range []struct {
		name   string
		script func(plan bool) (int, string)
		// reason is the fallback's code on clean data; "" when llm_bk acts
		// as bk does.
		reason  reason.Code
		beliefs int // requests about beliefs per episode
		plans   int // requests about plans, in all
	}{
		{"always yes", func(bool) (int, string) { return http.StatusOK, yes }, "", 1, episodes},
		{"always no", func(bool) (int, string) { return http.StatusOK, no }, reason.LLMNoBelief, 1, 0},
		{"no to the plan", func(plan bool) (int, string) {
			if plan {
				return http.StatusOK, "<think>The data may be stale.</think>\n```json\n" + no + "\n```"
			}
			return http.StatusOK, "Sure. " + yes
		}, reason.LLMNoPlan, 1, episodes},
		{"500 until the retries run out", func(bool) (int, string) { return http.StatusInternalServerError, "" }, reason.LLMError, defaultRetries + 1, 0},
		{"nonsense", func(bool) (int, string) { return http.StatusOK, "I would rather not say." }, reason.LLMError, 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeLLM(t, c.script)
			sum, lines := runLLM(t, f, seeds)
			if beliefs, plans, _ := f.counts(); beliefs != c.beliefs*episodes || plans != c.plans {
				t.Errorf("server saw %d belief and %d plan requests, want %d and %d", beliefs, plans, c.beliefs*episodes, c.plans)
			}
			m := sum.Mean(AgentLLMBK)
			if m.UnsafeAction != 0 || m.UnsupportedBelief != 0 || m.Traceability != 1 || m.FailureTransparency != 1 {
				t.Errorf("llm_bk metrics %+v: want no unsafe action or unsupported belief, full traceability and transparency", m)
			}
			for i, l := range lines[AgentLLMBK] {
				b := lines[AgentBK][i]
				if c.reason == "" {
					if l.Output.Final != b.Output.Final || l.Metrics != b.Metrics {
						t.Errorf("%s seed %d: llm_bk %+v %+v, bk %+v %+v", l.TaskID, l.Seed, l.Output.Final, l.Metrics, b.Output.Final, b.Metrics)
					}
					continue
				}
				fb := l.Output.View[blackboard.Actions][kernel.FallbackQueueForReview]
				if l.Output.Final.ActionCommitted || !l.Output.Final.SafeActionCommitted || fb["reason"] != string(c.reason) {
					t.Errorf("%s seed %d: final %+v, fallback %v; want the fallback with reason %s", l.TaskID, l.Seed, l.Output.Final, fb, c.reason)
				}
				// A correct stop is a success; declining to refund a clean,
				// non-duplicate charge is not.
				want := 1.0
				if b.Output.Final.ActionCommitted {
					want = 0
				}
				if l.Metrics.TaskSuccess != want {
					t.Errorf("%s seed %d: task success %v, want %v", l.TaskID, l.Seed, l.Metrics.TaskSuccess, want)
				}
			}
		})
	}
}

// With an endpoint configured, the default agents include llm_bk; a bad
// endpoint is refused before anything runs.
func TestLLMEndpointConfig(t *testing.T) {
	f := newFakeLLM(t, func(bool) (int, string) { return http.StatusOK, yes })
	cfg := DefaultConfig()
	cfg.Seeds = 1
	cfg.LLM.URL = f.URL
	var out bytes.Buffer
	sum, err := Run(context.Background(), cfg, &out)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{AgentStringGlue, AgentJSONGlue, AgentBK, AgentLLMBK}; strings.Join(sum.Agents, ",") != strings.Join(want, ",") {
		t.Errorf("agents = %v, want %v", sum.Agents, want)
	}
	for _, url := range []string{"ftp://localhost/v1", "localhost:8000", "http://"} {
		cfg.LLM.URL = url
		if err := cfg.Validate(); !errors.Is(err, ErrInvalidConfig) || !errors.Is(err, llm.ErrInvalidConfig) {
			t.Errorf("endpoint %q: Validate = %v, want ErrInvalidConfig", url, err)
		}
	}
}
