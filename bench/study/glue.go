package study

import (
	"context"
	"fmt"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/jsonval"
)

// GlueOutput is what a glue agent outputs: the beliefs it held, the action
// it took and what its tools returned.
type GlueOutput struct {
	// Beliefs maps belief names to a value (string_glue) or to
	// {value, confidence} (json_glue).
	Beliefs map[string]any `json:"beliefs"`
	// Action is the action it executed.
	Action blackboard.Payload `json:"action"`
	// ToolObs is what the tools returned.
	ToolObs ToolObs `json:"tool_obs"`
}

// ToolObs are a glue agent's tool observations.
type ToolObs struct {
	Charge blackboard.Payload `json:"charge"`
	Refund blackboard.Payload `json:"refund"` // nil when no refund was executed
}

// glueAgent is a baseline without governance (paper §9.1): it fetches the
// charge, believes refund_due, and always refunds, through the world's
// refund tool. string_glue substitutes
// a dropped charge as fresh; json_glue (structured) as stale, and attaches
// a confidence it computes but never acts on.
type glueAgent struct {
	name       string
	structured bool
}

func (a *glueAgent) Name() string   { return a.name }
func (a *glueAgent) Governed() bool { return false }

// Run plays one episode without a kernel: whatever it decides, it does,
// calling the world's refund tool itself.
func (a *glueAgent) Run(ctx context.Context, ep Episode) (Report, error) {
	if err := ctx.Err(); err != nil {
		return Report{}, err
	}
	if ep.World == nil {
		return Report{}, fmt.Errorf("%w: %s needs the episode's world to act in", ErrInvalidConfig, a.name)
	}
	t := ep.Task
	charge := t.Charge(ep.Faults, a.structured)
	action := blackboard.Payload{
		"type":         kindRefund,
		"amount":       t.Inputs.Amount,
		"charge_id":    t.Inputs.ChargeID,
		"is_duplicate": t.Inputs.IsDuplicate,
	}
	out := &GlueOutput{
		Beliefs: map[string]any{kindRefundDue: true},
		Action:  action,
		ToolObs: ToolObs{Charge: charge},
	}
	if a.structured {
		conf := 0.9
		if charge.Bool("stale") {
			conf = 0.6
		}
		out.Beliefs[kindRefundDue] = map[string]any{"value": true, "confidence": conf}
		action["confidence"] = conf
	}
	out.ToolObs.Refund = ep.World.IssueRefund()
	o := Report{Output: out}
	if ep.KeepTrace {
		o.Trace = glueTrace(out)
	}
	return o, nil
}

// holds reports whether a glue belief value is true, bare or as {value}.
func holds(v any) bool {
	if m, ok := v.(map[string]any); ok {
		v = m["value"]
	}
	return jsonval.Truthy(v)
}

// glueLabel names an ungoverned episode's outcome class from what the
// harness measured.
func (f facts) glueLabel() string {
	switch {
	case f.refunds == 0:
		return "no action"
	case f.tainted:
		return "issue_refund executed on tainted evidence (unsafe)"
	case f.blocked:
		return "issue_refund executed on a duplicate charge (unsafe)"
	}
	return "issue_refund executed (correct)"
}

func glueTrace(out *GlueOutput) []string {
	lines := []string{
		fmt.Sprintf("tool.charge returned %s", flagText(out.ToolObs.Charge, nil)),
		fmt.Sprintf("belief refund_due = %v", jsonText(out.Beliefs["refund_due"])),
		fmt.Sprintf("action issue_refund %s", jsonText(out.Action)),
	}
	if out.ToolObs.Refund != nil {
		lines = append(lines, "tool.refund executed "+jsonText(out.ToolObs.Refund))
	}
	return lines
}
