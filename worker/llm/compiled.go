package llm

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/blackboardkernel/bk/internal/kernelhook"
	"github.com/blackboardkernel/bk/pack"
	"github.com/blackboardkernel/bk/toolgate"
)

// WithCompiler makes the agent show the model a compiled context (package
// pack) each round instead of the growing conversation. A nil compiler is
// [ErrInvalidConfig].
//
// Each round the agent compiles a context for the round: the mission is
// [Task.System] (required), the current task [Task.User], the progress one
// line per earlier tool call of the run (its tool and the gate's outcome
// and code, never the model's own text or arguments), the last result the
// gate's answers to the previous round's calls (each as it may be
// recorded, [toolgate.Result.ForRecord]: a masked output field shows its
// masked form, as the evidence does), the tools those the gate
// surfaced, and the safety mode and the policy in force read from the
// gate ([pack.Govern]); the compiler adds the trace's current evidence and
// the namespace's memory, and compresses or evicts above 90 % of its
// window. The agent records the context ([pack.Pack.Record]), sends the
// model its prompt as the one user message, with the tool schemas of the
// tools it shows and no others, and names the record in every
// [toolgate.Call.Context] of the round, so that each decision record says
// what the model was shown. [AgentResult.Contexts] lists the records.
//
// A context is built for its run: a new run of a task (a sub-agent lane's
// next attempt) sees the trace's evidence, never an earlier attempt's
// text.
func WithCompiler(c *pack.Compiler) AgentOption {
	return func(a *Agent) { a.comp, a.nilComp = c, c == nil }
}

// compile compiles and records the context of a round: tools are the
// gate's surface, and res.messages[last:] the tool results of the round
// before (last < 0 in the first round).
func (a *Agent) compile(ctx context.Context, t Task, rt *taskRuntime, res *AgentResult, tools []toolgate.Spec, last int) (*pack.Pack, string, error) {
	k := a.cg.Kernel()
	run := pack.Run{TraceID: t.TraceID, Namespace: kernelhook.Namespace(k), Budget: t.Budget, Role: t.Caller, Intent: t.Intent}
	in := pack.Input{Mission: t.System, Task: t.User, Progress: progress(res), LastResult: lastResult(res, last), Tools: tools}
	if !rt.toolsAllowed() {
		in.Signals = []string{"Your grant of tool calls has ended (" + string(rt.t.Grant.End()) + "): call no tool, answer with what you have."}
	}
	if err := pack.Govern(ctx, a.cg, &run, &in); err != nil {
		return nil, "", err
	}
	p, err := a.comp.Compile(ctx, k.Reader(), run, in)
	if err != nil {
		return nil, "", err
	}
	id, err := p.Record(ctx, k.Governor())
	if err != nil {
		return nil, "", err
	}
	return p, id, nil
}

// progress is the run's tool calls so far, one step each: the tool, and
// the gate's outcome and code (and a failure's status and category).
func progress(res *AgentResult) []pack.Step {
	steps := make([]pack.Step, len(res.Calls))
	for i, c := range res.Calls {
		r := c.Result
		note := string(r.Outcome)
		if r.Code != "" {
			note += " " + string(r.Code)
		}
		ok := true
		if i < len(res.Trajectory) {
			e := res.Trajectory[i]
			ok = e.Status == ""
			if !ok {
				note += " (" + string(e.Status) + ", " + string(e.Category) + ")"
			}
		}
		steps[i] = pack.Step{Turn: i + 1, Tool: c.Call.Tool, OK: ok, Note: oneLine(note)}
	}
	return steps
}

// lastResult is the previous round's tool results (res.messages[last:]),
// one line each: the call's id and tool, and the gate's answer as a
// record may hold it: the compiled context is recorded, so a masked
// output field shows its masked form, never its real value.
func lastResult(res *AgentResult, last int) string {
	msgs := res.messages
	if last < 1 || last > len(msgs) {
		return ""
	}
	answers := make(map[string]toolgate.Result, len(res.Calls))
	for _, c := range res.Calls {
		answers[c.Call.ID] = c.Result
	}
	tools := map[string]string{}
	for _, c := range msgs[last-1].ToolCalls {
		tools[c.ID] = c.Function.Name
	}
	var b strings.Builder
	for _, m := range msgs[last:] {
		if m.Role != "tool" {
			continue
		}
		text := m.Content // a call the gate never saw: the agent's own words
		if r, ok := answers[m.ToolCallID]; ok && compiledReal() {
			text = r.ForRecord()
		}
		fmt.Fprintf(&b, "- %s %s: %s\n", m.ToolCallID, tools[m.ToolCallID], oneLine(text))
	}
	return b.String()
}

// shown is the surfaced tools the compiled context shows, in the
// surface's order: the model is sent no schema of a tool it was not shown.
func shown(tools []toolgate.Spec, p *pack.Pack) []toolgate.Spec {
	out := make([]toolgate.Spec, 0, len(tools))
	for _, sp := range tools {
		if slices.Contains(p.Manifest.Tools, sp.Name) {
			out = append(out, sp)
		}
	}
	return out
}

// oneLine turns line breaks into spaces: a step note and a result line are
// one line.
func oneLine(s string) string { return lineBreaks.Replace(s) }

var lineBreaks = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ")

// compiledReal reports whether a compiled context shows the gate's real
// answer to a call (off only under its mutation switch).
func compiledReal() bool {
	return !mutCompiledReal
}
