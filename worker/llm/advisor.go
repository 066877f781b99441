package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/blackboardkernel/bk/blackboard"
)

// Fact is one committed record shown to the model: its kind, its payload
// and the confidence its source gave (nil when none).
type Fact struct {
	Kind       string             `json:"kind"`
	Payload    blackboard.Payload `json:"payload"`
	Confidence *float64           `json:"confidence,omitempty"`
}

// Situation is what the model sees when it decides whether to propose.
// Names come from the agent's schema; the model can only say yes or no.
type Situation struct {
	// Task describes the agent's task in words.
	Task string
	// Kind is what would be proposed: the belief kind, or the plan kind.
	Kind string
	// Action is, for a plan, the action its step takes.
	Action string
	// Requires lists, for a belief, the percept kinds it rests on; for a
	// plan, the belief kinds its step requires.
	Requires []string
	// Percepts and Beliefs are the committed records the model may see.
	Percepts []Fact
	Beliefs  []Fact
}

// Advice is the model's decision.
type Advice struct {
	// Propose is true when the model says to propose.
	Propose bool
	// Code is "" when Propose is true; otherwise [CodeNoBelief] or
	// [CodeNoPlan] when the model declined, [CodeError] when it could not
	// be asked or its answer could not be read.
	Code blackboard.Code
	// Detail is the model's reason, or the failure behind CodeError.
	Detail string
	// Err is the failure behind CodeError: it wraps [ErrEndpoint] or
	// [ErrUnparsable]. Nil otherwise.
	Err error
	// Steps are the plan steps the model wrote. Only an [Advisor] built
	// with [WithModelSteps] fills them (for a plan it proposes).
	Steps []blackboard.Payload
}

// Advisor asks a model whether to propose a belief or a plan (paper §10.6,
// governed schema): the model answers {"propose": true|false, "reason":
// "..."} and nothing it writes reaches the blackboard, except under the
// deliberately ungoverned [WithModelSteps].
//
// An Advisor is safe for concurrent use; its calls share the [Client]'s
// concurrency bound.
type Advisor struct {
	c          *Client
	modelSteps bool
}

// AdvisorOption configures an [Advisor] in [NewAdvisor].
type AdvisorOption func(*Advisor)

// WithModelSteps is UNGOVERNED and off by default: it asks the model to
// write the plan's steps itself ({"propose": true, "steps": [{"action":
// ..., "requires_beliefs": [...]}]}), and a [Worker] then proposes the plan
// with those steps instead of the schema's. It exists to reproduce the
// bypass the paper observed (steps with empty requires_beliefs), which the
// kernel rejects as PLAN_UNGROUNDED_ACTION. Do not use it in production.
func WithModelSteps() AdvisorOption { return func(p *Advisor) { p.modelSteps = true } }

// NewAdvisor returns an Advisor that asks through c. A nil client or option
// is [ErrInvalidConfig].
func NewAdvisor(c *Client, opts ...AdvisorOption) (*Advisor, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: nil client", ErrInvalidConfig)
	}
	p := &Advisor{c: c}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: nil planner option", ErrInvalidConfig)
		}
		o(p)
	}
	return p, nil
}

// stage is what the model is asked about.
type stage struct {
	decline  blackboard.Code
	question func(s Situation, modelSteps bool) string
}

var (
	beliefStage = stage{decline: CodeNoBelief, question: func(s Situation, _ bool) string {
		return fmt.Sprintf("Should the agent propose the belief %q (value true), resting on the percepts %s?",
			s.Kind, list(s.Requires))
	}}
	planStage = stage{decline: CodeNoPlan, question: func(s Situation, modelSteps bool) string {
		if modelSteps {
			return fmt.Sprintf("Should the agent propose the plan %q to take the action %q? If so, write the plan's steps.",
				s.Kind, s.Action)
		}
		return fmt.Sprintf("Should the agent propose the plan %q: one step, the action %q, requiring the committed beliefs %s?",
			s.Kind, s.Action, list(s.Requires))
	}}
)

// DecideBelief asks the model whether to propose the belief s.Kind. A
// decline is an Advice with [CodeNoBelief]; an endpoint failure or an
// unreadable answer is an Advice with [CodeError] (and Err set), not an
// error. The error is non-nil only when ctx ends first; it then wraps the
// context's error.
func (p *Advisor) DecideBelief(ctx context.Context, s Situation) (Advice, error) {
	return p.decide(ctx, beliefStage, s)
}

// DecidePlan asks the model whether to propose the plan s.Kind. It behaves
// as [Advisor.DecideBelief], with [CodeNoPlan] for a decline. With
// [WithModelSteps], a yes must carry a list of step objects, else it is
// [CodeError].
func (p *Advisor) DecidePlan(ctx context.Context, s Situation) (Advice, error) {
	return p.decide(ctx, planStage, s)
}

func (p *Advisor) decide(ctx context.Context, st stage, s Situation) (Advice, error) {
	modelSteps := p.modelSteps && st.decline == CodeNoPlan
	text, err := p.c.Chat(ctx, p.messages(st, s, modelSteps))
	if err != nil && ctx.Err() != nil {
		return Advice{}, err
	}
	var v Advice
	if err == nil {
		v, err = parseAdvice(text, st.decline, modelSteps)
	}
	if err != nil {
		v = Advice{Code: CodeError, Detail: err.Error(), Err: err}
	}
	p.c.log.DebugContext(ctx, "llm: advice", "kind", s.Kind, "propose", v.Propose, "code", string(v.Code))
	return v, nil
}

const systemPrompt = `You are the planning component of an agent that runs under a Blackboard Kernel. You never act and never write records yourself. The agent has fixed what it may propose: the names, the evidence each item rests on, and the payloads. Your only decision is whether the agent should propose the item it asks about.

The kernel validates every proposal before anything happens: it checks that the evidence exists, is fresh, is not in conflict and is confident enough, and it enforces the task's constraints (duplicates, for example). Do not decline because of those checks; making them is the kernel's job. Propose when the observations concern this task and, taken at face value, support the item. Decline only when they are about something else or plainly contradict it. A declined or rejected proposal sends the case to human review.

Answer with exactly one JSON object and no other text:
`

const (
	answerFormat      = `{"propose": true or false, "reason": "one short sentence"}`
	answerFormatSteps = `{"propose": true or false, "reason": "one short sentence", "steps": [{"action": "the action type", "requires_beliefs": ["belief kind", "..."]}]}`
)

func (p *Advisor) messages(st stage, s Situation, modelSteps bool) []Message {
	format := answerFormat
	if modelSteps {
		format = answerFormatSteps
	}
	ctxJSON, _ := json.MarshalIndent(struct {
		Task     string `json:"task"`
		Percepts []Fact `json:"percepts"`
		Beliefs  []Fact `json:"committed_beliefs"`
	}{s.Task, nonNil(s.Percepts), nonNil(s.Beliefs)}, "", "  ")
	return []Message{
		{Role: "system", Content: systemPrompt + format},
		{Role: "user", Content: st.question(s, modelSteps) + "\n\nWhat the agent knows (JSON):\n" + string(ctxJSON)},
	}
}

func nonNil(f []Fact) []Fact {
	if f == nil {
		return []Fact{}
	}
	return f
}

func list(names []string) string {
	b, _ := json.Marshal(names)
	return string(b)
}

// parseAdvice reads the model's answer.
func parseAdvice(text string, decline blackboard.Code, modelSteps bool) (Advice, error) {
	m, err := extract(text)
	if err != nil {
		return Advice{}, err
	}
	propose, ok := m["propose"].(bool)
	if !ok {
		return Advice{}, fmt.Errorf("%w: no boolean \"propose\" in the answer", ErrUnparsable)
	}
	reason, _ := m["reason"].(string)
	reason = strings.TrimSpace(reason)
	if !propose {
		return Advice{Code: decline, Detail: reason}, nil
	}
	v := Advice{Propose: true, Detail: reason}
	if modelSteps {
		raw, ok := m["steps"].([]any)
		if !ok {
			return Advice{}, fmt.Errorf("%w: no list \"steps\" in the answer", ErrUnparsable)
		}
		v.Steps = make([]blackboard.Payload, 0, len(raw))
		for i, s := range raw {
			step, ok := s.(map[string]any)
			if !ok {
				return Advice{}, fmt.Errorf("%w: step %d is not an object", ErrUnparsable, i)
			}
			v.Steps = append(v.Steps, step)
		}
	}
	return v, nil
}
