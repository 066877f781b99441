package pack

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/internal/snapshot"
	"github.com/blackboardkernel/bk/toolgate"
)

// governance is what a compiled context reads of the tool gate: a trace's
// run controls and the gate's policy snapshot with its hash (as decision
// records name it). *toolgate.Gate is the one implementation; the
// interface lets the tests give the governance as data.
type governance interface {
	Controls(ctx context.Context, traceID string) (toolgate.Controls, error)
	Policy() audit.Policy
}

// Govern sets on run and in what the gate holds for the run's trace, so
// that the compiled context shows the policy in force and nothing the
// gate would refuse:
//
//   - run.ReadOnly is the trace's safety mode (its run controls);
//   - in.Policy.Hash is the policy snapshot's hash; in.Policy.Rules are
//     the snapshot's rules and each tool's governance (what it requires,
//     its bindings, its once-key, its approval rule), one line each;
//     in.Policy.Approval the tools with an approval rule;
//   - in.Policy.Prohibited are the tools the trace's controls prohibit
//     and, in a read_only trace, every tool with an effect (one the
//     snapshot does not say is read-only, or one it does not list: fail
//     closed), so that [Compiler.Compile] shows none of them and lists
//     each one in.Tools held as a cut.
//
// What in.Policy held before is kept (its rules first); the hash is
// replaced. It fails with the gate's error when the controls cannot be
// read, and with [ErrInvalid] for a nil gate, no trace or a policy snapshot
// that does not decode.
func Govern(ctx context.Context, g *toolgate.Gate, run *Run, in *Input) error {
	if g == nil {
		return newErr("govern", "", ErrInvalid, "nil gate, run or input")
	}
	return govern(ctx, g, run, in)
}

// govern is [Govern] on any governance.
func govern(ctx context.Context, g governance, run *Run, in *Input) error {
	if g == nil || run == nil || in == nil {
		return newErr("govern", "", ErrInvalid, "nil gate, run or input")
	}
	if run.TraceID == "" {
		return newErr("govern", "", ErrInvalid, "no trace")
	}
	ctl, err := g.Controls(ctx, run.TraceID)
	if err != nil {
		return err
	}
	snap := g.Policy()
	pol, err := snapshot.Decode(snap)
	if err != nil {
		return newErr("govern", "", ErrInvalid, "%v", err)
	}
	run.ReadOnly = ctl.ReadOnly
	p := &in.Policy
	p.Hash = g.Policy().Hash
	for _, r := range pol.Rules {
		p.Rules = append(p.Rules, r.Name+" (on "+r.On+" "+r.Target+"): "+r.Expr)
	}
	known := make(map[string]bool, len(pol.Tools))
	for _, t := range pol.Tools {
		known[t.Name] = true
		if line := toolRule(t); line != "" {
			p.Rules = append(p.Rules, line)
		}
		if t.Approval != nil {
			p.Approval = addName(p.Approval, t.Name)
		}
		if run.ReadOnly && !t.ReadOnly && readOnlyEnforced() {
			p.Prohibited = addName(p.Prohibited, t.Name)
		}
	}
	for _, name := range ctl.Prohibited {
		p.Prohibited = addName(p.Prohibited, name)
	}
	if run.ReadOnly && readOnlyEnforced() {
		for _, sp := range in.Tools {
			if !known[sp.Name] {
				p.Prohibited = addName(p.Prohibited, sp.Name)
			}
		}
	}
	return nil
}

// toolRule is a tool's governance in one line, or "" when it has none.
func toolRule(t snapshot.Tool) string {
	var parts []string
	if len(t.Requires) > 0 {
		parts = append(parts, "requires the beliefs "+strings.Join(t.Requires, ", "))
	}
	for _, b := range t.Bindings {
		field := b.Field
		if field == "" {
			field = b.Arg
		}
		op := b.Op
		if op == "" {
			op = "equal"
		}
		parts = append(parts, b.Arg+" "+strings.ReplaceAll(op, "_", " ")+" the observed "+b.Percept+"."+field)
	}
	if t.Once != nil {
		n := "once"
		if t.Once.Limit > 1 {
			n = "at most " + strconv.Itoa(t.Once.Limit) + " times"
		}
		parts = append(parts, n+" per "+strings.Join(t.Once.Fields, ", "))
	}
	if a := t.Approval; a != nil {
		if a.Always {
			parts = append(parts, "always needs an approval")
		} else {
			parts = append(parts, "needs an approval when "+a.When)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "tool " + t.Name + ": " + strings.Join(parts, "; ")
}

func addName(list []string, name string) []string {
	if slices.Contains(list, name) {
		return list
	}
	return append(list, name)
}

// readOnlyEnforced reports whether a read-only run is shown only read-only
// tools (off only under its mutation switch).
func readOnlyEnforced() bool {
	return !mutReadOnly
}
