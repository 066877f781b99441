package advisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
)

// Reason codes the planner records when the model, not the kernel, stops an
// episode. They are stable strings, like the kernel's own codes;
// worker/llm exports them.
const ()

// ErrUnparsable: a model answer that holds no JSON object, or whose object
// is not advice.
var ErrUnparsable = errors.New("llm: unparsable answer")

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
	// Code is "" when Propose is true; otherwise [reason.LLMNoBelief] or
	// [reason.LLMNoPlan] when the model declined, [reason.LLMError] when it could not
	// be asked or its answer could not be read.
	Code reason.Code
	// Detail is the model's reason, or the failure behind reason.LLMError.
	Detail string
	// Err is the failure behind reason.LLMError: it wraps the Chat's error
	// (worker/llm's ErrEndpoint) or [ErrUnparsable]. Nil otherwise.
	Err error
	// Steps are the plan steps the model wrote. Only an [Advisor] with
	// ModelSteps fills them (for a plan it proposes).
	Steps []blackboard.Payload
}

// Chat sends a system prompt and a user message to a model and returns
// the text of its answer: worker/llm's Client.Chat.
type Chat func(ctx context.Context, system, user string) (string, error)

// Advisor asks a model whether to propose a belief or a plan (paper §10.6,
// governed schema): the model answers {"propose": true|false, "reason":
// "..."} and nothing it writes reaches the blackboard, except under the
// deliberately ungoverned ModelSteps.
//
// An Advisor is safe for concurrent use when its Chat is.
type Advisor struct {
	// Chat asks the model. Required.
	Chat Chat
	// ModelSteps is UNGOVERNED: it asks the model to write the plan's
	// steps itself ({"propose": true, "steps": [{"action": ...,
	// "requires_beliefs": [...]}]}), and Advice.Steps carries them. It
	// exists to reproduce the bypass the paper observed (steps with empty
	// requires_beliefs), which the kernel rejects as
	// PLAN_UNGROUNDED_ACTION.
	ModelSteps bool
}

// stage is what the model is asked about.
type stage struct {
	decline  reason.Code
	question func(s Situation, modelSteps bool) string
}

var (
	beliefStage = stage{decline: reason.LLMNoBelief, question: func(s Situation, _ bool) string {
		return fmt.Sprintf("Should the agent propose the belief %q (value true), resting on the percepts %s?",
			s.Kind, list(s.Requires))
	}}
	planStage = stage{decline: reason.LLMNoPlan, question: func(s Situation, modelSteps bool) string {
		if modelSteps {
			return fmt.Sprintf("Should the agent propose the plan %q to take the action %q? If so, write the plan's steps.",
				s.Kind, s.Action)
		}
		return fmt.Sprintf("Should the agent propose the plan %q: one step, the action %q, requiring the committed beliefs %s?",
			s.Kind, s.Action, list(s.Requires))
	}}
)

// DecideBelief asks the model whether to propose the belief s.Kind. A
// decline is an Advice with [reason.LLMNoBelief]; an endpoint failure or an
// unreadable answer is an Advice with [reason.LLMError] (and Err set), not an
// error. The error is non-nil only when ctx ends first; it then wraps the
// context's error.
func (p Advisor) DecideBelief(ctx context.Context, s Situation) (Advice, error) {
	return p.decide(ctx, beliefStage, s)
}

// DecidePlan asks the model whether to propose the plan s.Kind. It behaves
// as [Advisor.DecideBelief], with [reason.LLMNoPlan] for a decline. With
// ModelSteps, a yes must carry a list of step objects, else it is
// [reason.LLMError].
func (p Advisor) DecidePlan(ctx context.Context, s Situation) (Advice, error) {
	return p.decide(ctx, planStage, s)
}

func (p Advisor) decide(ctx context.Context, st stage, s Situation) (Advice, error) {
	modelSteps := p.ModelSteps && st.decline == reason.LLMNoPlan
	system, user := prompt(st, s, modelSteps)
	text, err := p.Chat(ctx, system, user)
	if err != nil && ctx.Err() != nil {
		return Advice{}, err
	}
	var v Advice
	if err == nil {
		v, err = parseAdvice(text, st.decline, modelSteps)
	}
	if err != nil {
		v = Advice{Code: reason.LLMError, Detail: err.Error(), Err: err}
	}
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

// prompt is the system prompt and the user message of a question.
func prompt(st stage, s Situation, modelSteps bool) (system, user string) {
	format := answerFormat
	if modelSteps {
		format = answerFormatSteps
	}
	ctxJSON, _ := json.MarshalIndent(struct {
		Task     string `json:"task"`
		Percepts []Fact `json:"percepts"`
		Beliefs  []Fact `json:"committed_beliefs"`
	}{s.Task, nonNil(s.Percepts), nonNil(s.Beliefs)}, "", "  ")
	return systemPrompt + format, st.question(s, modelSteps) + "\n\nWhat the agent knows (JSON):\n" + string(ctxJSON)
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
func parseAdvice(text string, decline reason.Code, modelSteps bool) (Advice, error) {
	m, err := Extract(text)
	if err != nil {
		return Advice{}, err
	}
	propose, ok := m["propose"].(bool)
	if !ok {
		return Advice{}, fmt.Errorf("%w: no boolean \"propose\" in the answer", ErrUnparsable)
	}
	why, _ := m["reason"].(string)
	why = strings.TrimSpace(why)
	if !propose {
		return Advice{Code: decline, Detail: why}, nil
	}
	v := Advice{Propose: true, Detail: why}
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
