package study

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/blackboardkernel/bk/bench/perturb"
	"github.com/blackboardkernel/bk/kernel"
)

// Agent is one of the systems the study compares. Run plays one episode and
// returns what the agent output, measured.
//
// Run may be called concurrently for different episodes; an Agent must be
// safe for that. A cancelled context makes Run return the context's error.
type Agent interface {
	// Name is the agent's registered name ("bk", "json_glue", ...).
	Name() string
	// Governed reports whether the agent runs on the kernel; governed agents
	// get a column in Table 4.
	Governed() bool
	// Run plays one episode.
	Run(ctx context.Context, ep Episode) (Outcome, error)
}

// Episode is one (task, seed) as an agent plays it.
type Episode struct {
	Task *Task
	Seed int
	// Faults are what the payment tool suffers on this (task, seed); they
	// are the same for every agent.
	Faults perturb.Flags
	// TraceID is the kernel trace the episode writes to; it is unique
	// within the run's store.
	TraceID string
	// KeepTrace asks the agent to render its trace into Outcome.Trace.
	KeepTrace bool
}

// Outcome is what an agent returns for one episode.
type Outcome struct {
	// Output is the agent's output, encoded as the JSON line's "output"
	// ([*GlueOutput] or [*KernelOutput]).
	Output any
	// Metrics are measured from what the agent recorded.
	Metrics Metrics
	// Label names the episode's outcome class, e.g. "issue_refund
	// COMMITTED"; the report shows one trace per agent and label.
	Label string
	// Trace is the rendered trace, one line per step, when asked for.
	Trace []string
}

// LLMConfig is how llm_bk reaches an OpenAI-compatible endpoint.
type LLMConfig struct {
	URL             string // base URL; empty means no LLM is configured
	Model           string
	APIKey          string // never printed: see [LLMConfig.String]
	ReasoningEffort string // passed through when set (low, medium, high)
	Concurrency     int    // requests in flight, at least 1
}

// Enabled reports whether an endpoint is configured.
func (c LLMConfig) Enabled() bool { return c.URL != "" }

// String describes c without its API key.
func (c LLMConfig) String() string {
	key := "none"
	if c.APIKey != "" {
		key = "set"
	}
	return fmt.Sprintf("llm{url=%q model=%q api_key=%s reasoning_effort=%q concurrency=%d}",
		c.URL, c.Model, key, c.ReasoningEffort, c.Concurrency)
}

// GoString is String, so that %#v does not print the API key either.
func (c LLMConfig) GoString() string { return c.String() }

// env is what an agent constructor gets.
type env struct {
	// store is the run's shared store; nil means a fresh in-memory kernel
	// per episode.
	store kernel.Store
	llm   LLMConfig
}

// constructor builds a registered agent.
type constructor func(e env) (Agent, error)

// Agent names.
const (
	AgentStringGlue = "string_glue"
	AgentJSONGlue   = "json_glue"
	AgentBK         = "bk"
	AgentLLMBK      = "llm_bk"
)

// registry maps every agent name to its constructor. To add an agent, add
// a line here.
func registry() map[string]constructor {
	return map[string]constructor{
		AgentStringGlue: func(env) (Agent, error) { return &glueAgent{name: AgentStringGlue}, nil },
		AgentJSONGlue:   func(env) (Agent, error) { return &glueAgent{name: AgentJSONGlue, structured: true}, nil },
		AgentBK:         func(e env) (Agent, error) { return newKernelAgent(AgentBK, always{}, e.store) },
		AgentLLMBK:      newLLMBK,
	}
}

// AgentNames returns the registered agent names, sorted.
func AgentNames() []string {
	var names []string
	for name := range registry() {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// DefaultAgents returns the agents a run uses when none are named: the
// three deterministic ones, plus llm_bk when an LLM endpoint is configured.
func DefaultAgents(llm LLMConfig) []string {
	names := []string{AgentStringGlue, AgentJSONGlue, AgentBK}
	if llm.Enabled() {
		names = append(names, AgentLLMBK)
	}
	return names
}

// newAgents builds the named agents, refusing unknown and repeated names.
func newAgents(names []string, e env) ([]Agent, error) {
	reg := registry()
	agents := make([]Agent, 0, len(names))
	for i, name := range names {
		build, ok := reg[name]
		if !ok {
			return nil, fmt.Errorf("%w %q (valid: %s)", ErrUnknownAgent, name, strings.Join(AgentNames(), ", "))
		}
		if slices.Contains(names[:i], name) {
			return nil, fmt.Errorf("%w: agent %q listed twice", ErrInvalidConfig, name)
		}
		a, err := build(e)
		if err != nil {
			return nil, fmt.Errorf("agent %s: %w", name, err)
		}
		agents = append(agents, a)
	}
	return agents, nil
}

// decider is the planner's judgement in a kernel agent: whether to propose
// the belief and whether to propose the plan. Names, dependencies and
// payloads are the agent's (the governed schema of paper §10.6); a decider
// only says yes or no.
//
// On no it returns a machine-readable code (LLM_NO_BELIEF, LLM_NO_PLAN,
// LLM_ERROR, ...) that the agent records as the reason of its safe fallback;
// such codes must be listed in declined. A decider reports trouble the
// episode should survive (an endpoint that kept failing) as a no with a
// code; a non-nil error aborts the run, and is reserved for a cancelled
// context or a broken configuration. A decider must be safe for concurrent
// use.
type decider interface {
	belief(ctx context.Context, s situation) (propose bool, code kernel.Code, err error)
	plan(ctx context.Context, s situation) (propose bool, code kernel.Code, err error)
}

// situation is what a decider sees.
type situation struct {
	task *Task
	// charge is the committed charge percept and confidence its provenance
	// confidence (nil when the source gave none).
	charge     kernel.Payload
	confidence *float64
	// beliefCode is the kernel's decision on the belief, for the plan
	// decision ("" when the belief was not proposed).
	beliefCode kernel.Code
}

// Codes a decider records when it declines (paper §10.6).
const (
	CodeLLMNoBelief = kernel.Code("LLM_NO_BELIEF") // the model declined to propose the belief
	CodeLLMNoPlan   = kernel.Code("LLM_NO_PLAN")   // the model declined to propose the plan
	CodeLLMError    = kernel.Code("LLM_ERROR")     // the endpoint failed after its retries
)

// declined reports whether c is a code with which a decider declines. A
// fallback recorded for one has no rejected proposal to point at; its chain
// ends at the percept the decision was taken on.
func declined(c kernel.Code) bool {
	switch c {
	case CodeLLMNoBelief, CodeLLMNoPlan, CodeLLMError:
		return true
	}
	return false
}

// always is the deterministic planner's decider: it always proposes.
type always struct{}

func (always) belief(context.Context, situation) (bool, kernel.Code, error) { return true, "", nil }
func (always) plan(context.Context, situation) (bool, kernel.Code, error)   { return true, "", nil }

// newLLMBK builds llm_bk: the bk agent with an LLM-backed decider.
func newLLMBK(e env) (Agent, error) {
	if !e.llm.Enabled() {
		return nil, fmt.Errorf("%w: llm_bk needs an endpoint (--llm-url or BK_LLM_URL)", ErrInvalidConfig)
	}
	if e.llm.Concurrency < 1 {
		return nil, fmt.Errorf("%w: LLM concurrency %d must be at least 1", ErrInvalidConfig, e.llm.Concurrency)
	}
	d, err := newLLMDecider(e.llm)
	if err != nil {
		return nil, err
	}
	return newKernelAgent(AgentLLMBK, d, e.store)
}

// newLLMDecider is the seam where llm_bk gets its LLM: build a [decider]
// on the worker/llm planner from cfg here. Until then it refuses with
// [ErrLLMNotWired].
func newLLMDecider(cfg LLMConfig) (decider, error) {
	return nil, fmt.Errorf("%w (endpoint %s is configured; run without --llm-url/BK_LLM_URL, or wire newLLMDecider in bench/study/agent.go)",
		ErrLLMNotWired, cfg.URL)
}
