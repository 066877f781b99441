package toolgate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/canon"
	"github.com/blackboardkernel/bk/internal/jsonval"
	"github.com/blackboardkernel/bk/reason"
)

// Binding ties one argument of a tool's calls to the observation its
// grounding rests on: the percepts under the beliefs the tool requires, as
// the kernel validated them. A refund's order_id equals the order
// percept's order_id, its amount is at most the order's amount:
//
//	Bindings: []toolgate.Binding{
//		{Arg: "order_id", Percept: "order", Op: "equal"},
//		{Arg: "amount", Percept: "order", Op: "at_most"},
//	}
//
// A call whose arguments do not follow is refused with
// ARGUMENT_NOT_BOUND, naming the argument and the percept, before the
// kernel decides it; so is one where the binding cannot be evaluated (no
// such argument, no percept of that kind under the beliefs, no such
// field, a non-number for at_most or at_least): a binding fails closed.
type Binding struct {
	// Arg is the argument: a top-level property of the call.
	Arg string `json:"arg"`
	// Percept is the percept kind the argument follows from. Every
	// observation of that kind under the tool's required beliefs must
	// agree with the argument.
	Percept string `json:"percept"`
	// Field is the percept's field; empty means Arg.
	Field string `json:"field,omitempty"`
	// Op is how the argument compares with the field: "equal" (the same
	// JSON value in canonical form: numbers by value, keys sorted, strings
	// as they are), "at_most" or "at_least" (both are numbers and the
	// argument is not greater, or not smaller). [New] refuses any other.
	Op string `json:"op,omitempty"`
}

// The comparisons of a [Binding], as its Op names them.
const (
	opEqual   = "equal"
	opAtMost  = "at_most"
	opAtLeast = "at_least"
)

// field returns the observed field the binding reads.
func (b Binding) field() string {
	if b.Field != "" {
		return b.Field
	}
	return b.Arg
}

// checkBindings checks what a tool declares about its arguments' relation
// to its grounding: a tool that rests on beliefs declares Bindings or says
// Unbound, not both; a tool that rests on no belief has no grounding to bind to; every
// binding names a declared argument, a percept kind and an operator.
func checkBindings(t *Tool, s *schema) error {
	switch {
	case t.restsOnNothing() && len(t.Bindings) > 0:
		return fmt.Errorf("bindings on a tool that requires no belief: there is no grounding to bind to")
	case len(t.Bindings) > 0 && t.Unbound:
		return fmt.Errorf("both Bindings and Unbound")
	case bindingsDeclared() && !t.restsOnNothing() && len(t.Bindings) == 0 && !t.Unbound:
		return fmt.Errorf("a tool that rests on beliefs must declare how its arguments follow from the observations (Bindings), or that they follow from none (Unbound)")
	}
	for i, b := range t.Bindings {
		switch {
		case b.Arg == "" || b.Percept == "":
			return fmt.Errorf("binding %d: empty argument or percept kind", i)
		case b.Op != opEqual && b.Op != opAtMost && b.Op != opAtLeast:
			return fmt.Errorf("binding %d: operator %q (want equal, at_most or at_least)", i, b.Op)
		case len(s.props) > 0 && !hasProp(s, b.Arg):
			return fmt.Errorf("binding %d: argument %q is not a declared property", i, b.Arg)
		}
	}
	return nil
}

func hasProp(s *schema, name string) bool {
	_, ok := s.props[name]
	return ok
}

// bindingFailure is a binding a call's arguments break.
type bindingFailure struct {
	arg     string
	percept string // the percept record, when one was read
	detail  string
}

// beliefGrounding returns the evidence artifacts of the beliefs the call
// of e in the trace would rest on now: the latest committed belief of each
// required kind. ok is false when one is missing, or hidden by a pending
// proposal: the kernel then decides, and the committed action's own
// grounding is checked after it.
func (x *executor) beliefGrounding(ctx context.Context, e *entry, traceID string) (artifacts []string, ok bool, err error) {
	for _, kind := range e.Requires {
		b, err := x.reader.Find(ctx, traceID, blackboard.Beliefs, kind)
		if errors.Is(err, blackboard.ErrNotFound) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		if b.Mode != blackboard.ModeCommit {
			return nil, false, nil
		}
		for _, ev := range b.EvidenceRefs {
			if !slices.Contains(artifacts, ev) {
				artifacts = append(artifacts, ev)
			}
		}
	}
	return artifacts, true, nil
}

// groundingPercepts returns the percepts the evidence artifacts validated,
// the observations a grounding rests on, each once.
func (x *executor) groundingPercepts(ctx context.Context, artifacts []string) ([]blackboard.Record, error) {
	var out []blackboard.Record
	var seen []string
	for _, id := range artifacts {
		ev, err := x.reader.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		if ev.Slot != blackboard.Evidence {
			continue
		}
		for _, pid := range ev.Provenance.InputRefs {
			if slices.Contains(seen, pid) {
				continue
			}
			seen = append(seen, pid)
			p, err := x.reader.Get(ctx, pid)
			if err != nil {
				return nil, err
			}
			if p.Slot == blackboard.Percepts {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// checkArgs checks a call's arguments against the tool's bindings and the
// grounding's percepts; nil when every binding holds.
func (e *entry) checkArgs(args blackboard.Payload, percepts []blackboard.Record) *bindingFailure {
	if !argsBound() {
		return nil
	}
	for _, b := range e.Bindings {
		given, has := args[b.Arg]
		if !has {
			return &bindingFailure{arg: b.Arg, detail: "the call has no argument " + quote(b.Arg) + ", which follows from percept " + quote(b.Percept)}
		}
		found := false
		for i := range percepts {
			p := &percepts[i]
			if p.Kind != b.Percept {
				continue
			}
			found = true
			observed, has := p.Payload[b.field()]
			if !has {
				return &bindingFailure{arg: b.Arg, percept: p.ID, detail: "percept " + p.ID + " (" + b.Percept + ") has no field " + quote(b.field())}
			}
			if !holds(b.Op, given, observed) {
				return &bindingFailure{arg: b.Arg, percept: p.ID, detail: fmt.Sprintf("argument %s = %s is not %s %s.%s = %s (percept %s)",
					quote(b.Arg), shown(given), opText(b.Op), b.Percept, b.field(), shown(observed), p.ID)}
			}
		}
		if !found {
			return &bindingFailure{arg: b.Arg, detail: "no percept " + quote(b.Percept) + " under the beliefs the call rests on, to bind " + quote(b.Arg) + " to"}
		}
	}
	return nil
}

// holds compares an argument with an observed value.
func holds(op string, given, observed any) bool {
	if op == opEqual {
		a, errA := canon.Encode(given)
		b, errB := canon.Encode(observed)
		return errA == nil && errB == nil && bytes.Equal(a, b)
	}
	a, okA := number(given)
	b, okB := number(observed)
	if !okA || !okB {
		return false // a comparison of non-numbers fails closed
	}
	if op == opAtMost {
		return a <= b
	}
	return a >= b
}

// number reads a JSON number (a bool or a string is not one).
func number(v any) (float64, bool) {
	switch v.(type) {
	case bool, string, nil:
		return 0, false
	}
	return jsonval.Float(v)
}

func opText(op string) string {
	switch op {
	case opAtMost:
		return "at most"
	case opAtLeast:
		return "at least"
	}
	return "equal to"
}

// shown is a value in a refusal's detail: its canonical JSON (which
// escapes control characters), cut short.
func shown(v any) string {
	b, err := canon.Encode(v)
	if err != nil {
		return "(not JSON)"
	}
	s := string(b)
	if len(s) > 80 {
		s = strings.ToValidUTF8(s[:80], "") + "..."
	}
	return s
}

// bind checks a call's arguments against the grounding it would rest on
// (the evidence artifacts of its beliefs) before the kernel decides it. A
// call that breaks a binding is refused with ARGUMENT_NOT_BOUND and stores
// only its decision record: the grounding is not used up.
func (x *executor) bind(ctx context.Context, traceID string, e *entry, args blackboard.Payload, artifacts []string, cc blackboard.Payload) (Result, bool, error) {
	percepts, err := x.groundingPercepts(ctx, artifacts)
	if err != nil {
		return Result{}, true, err
	}
	f := e.checkArgs(args, percepts)
	if f == nil {
		return Result{}, false, nil
	}
	cc["argument"] = f.arg
	if f.percept != "" {
		cc["percept"] = f.percept
	}
	res, err := x.refuse(ctx, traceID, e, e.Name, reason.ArgumentNotBound, f.detail, cc)
	res.RootCause.Record = f.percept
	return res, true, err
}

// bindCommitted checks a committed action's arguments against the
// grounding the kernel recorded for it (its evidence refs). One that
// breaks a binding never runs: it is refused for good.
func (x *executor) bindCommitted(ctx context.Context, e *entry, act blackboard.Record, args blackboard.Payload, cc blackboard.Payload) (Result, bool, error) {
	percepts, err := x.groundingPercepts(ctx, act.EvidenceRefs)
	if err != nil {
		return Result{ActionID: act.ID}, true, err
	}
	f := e.checkArgs(args, percepts)
	if f == nil {
		return Result{}, false, nil
	}
	j, err := x.newJob(ctx, e, act, cc)
	if err != nil {
		return Result{ActionID: act.ID}, true, err
	}
	j.cc["argument"] = f.arg
	if f.percept != "" {
		j.cc["percept"] = f.percept
	}
	res, err := x.refuseForGood(ctx, j, reason.ArgumentNotBound, f.detail)
	return res, true, err
}
