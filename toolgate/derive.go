package toolgate

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/expr"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// Derive is a belief a tool's successful result grounds, declared on the
// tool ([Tool.Derives]), so that no agent code submits a belief by hand.
// After the gate records a successful result, it evaluates Value and
// Fields over it and proposes the belief as a planner of its own
// ([audit.DeriverWriter]: "derive:" and the tool's name), with depends_on the id
// of the result record it was computed from (and that id as its input
// ref): the kernel validates it like any belief (a result superseded by a
// newer one of its kind, stale, conflicting or low-confidence evidence
// refuses it, belief rules check its fields), an action that requires it
// is refused once that result is no longer the current observation of its
// kind (SUPERSEDED_EVIDENCE), and the call's [Result] says what became of
// it ([Derived]). The kind is the deriver's alone: the gate reserves it
// (Config.Kernel.Reserved), and a proposal of it by any other handle is
// PERMISSION_DENIED.
//
//	Derives: []toolgate.Derive{{
//		Belief: "refund_due",
//		Value:  "result.refundable && result.refunded < result.amount",
//		Fields: map[string]string{"order_id": "result.order_id", "max_refund": "result.amount - result.refunded"},
//	}}
//
// The expressions are CEL over result (the result's payload, a map) and
// args (the committed arguments, a map); JSON numbers are doubles, and
// int literals compare with them. [New] compiles them and registers the
// belief kind with the kernel as resting on the result kind (an owner's
// own belief spec (Config.Kernel.BeliefSpecs) for the kind takes precedence, and may only
// add evidence the belief must rest on). A result over which Value is not
// a bool, or a field cannot be evaluated (a missing key, a type error),
// proposes nothing: the derivation fails closed, with a decision record
// saying why (DERIVATION_FAILED).
type Derive struct {
	// Belief is the belief kind proposed.
	Belief string `json:"belief"`
	// Value is a CEL expression, of type bool, for the belief's truth
	// value. A false belief is proposed too: it says the result does not
	// ground what the belief claims, and a tool requiring it is refused.
	Value string `json:"value"`
	// Fields are the belief's payload fields besides its value, each a CEL
	// expression of any JSON type; a belief rule reads them as
	// beliefs.<kind>.<field>. The kernel's keys (value, depends_on, type,
	// requires_beliefs, the derived flags) may not be among them.
	Fields map[string]string `json:"fields,omitempty"`
}

// Derived is what became of one belief a call's result derives.
type Derived struct {
	// Belief is the belief kind.
	Belief string `json:"belief"`
	// Code is COMMITTED (reason.Committed) when the kernel committed the belief, the
	// kernel's refusal code when it refused it (STALE_EVIDENCE, ...), or
	// DERIVATION_FAILED when the rule could not be evaluated.
	Code reason.Code `json:"code"`
	// Value is the belief's truth value as derived (false when the
	// derivation failed).
	Value bool `json:"value"`
	// BeliefID is the committed belief; DecisionID the decision record
	// (the kernel's decision, or the record of the failed derivation).
	BeliefID   string `json:"belief_id,omitempty"`
	DecisionID string `json:"decision_id,omitempty"`
	// Detail says why a derivation failed or a belief was refused.
	Detail string `json:"detail,omitempty"`
}

// Variables a derivation sees.
const (
	varResult = "result"
	varArgsD  = "args"
)

// derivation is a compiled [Derive].
type derivation struct {
	Derive
	value  cel.Program
	fields []derivedField // in name order: records read the same every time
}

type derivedField struct {
	name string
	prg  cel.Program
}

// reservedBeliefKeys are payload keys a derived belief's fields may not
// set: the kernel's and those [argsOf] keeps out of arguments.
var reservedBeliefKeys = append([]string{"value", "depends_on"}, reservedArgs...)

// compileDerives compiles a tool's derivations.
func compileDerives(ds []Derive) ([]derivation, error) {
	if len(ds) == 0 {
		return nil, nil
	}
	env, err := expr.NewEnv(cel.Variable(varResult, expr.Object), cel.Variable(varArgsD, expr.Object))
	if err != nil {
		return nil, err
	}
	compile := func(what, src string) (cel.Program, *cel.Ast, error) {
		ast, err := expr.Compile(env, src)
		if err == nil {
			err = expr.CheckCost(env, ast)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s %w", what, err)
		}
		prg, err := expr.TrackedProgram(env, ast)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %v", what, err)
		}
		return prg, ast, nil
	}
	out := make([]derivation, 0, len(ds))
	for _, d := range ds {
		if err := checkName(d.Belief); err != nil {
			return nil, fmt.Errorf("derived belief kind %q: %v", d.Belief, err)
		}
		if slices.ContainsFunc(out, func(o derivation) bool { return o.Belief == d.Belief }) {
			return nil, fmt.Errorf("belief %q derived twice", d.Belief)
		}
		c := derivation{Derive: Derive{Belief: d.Belief, Value: d.Value, Fields: make(map[string]string, len(d.Fields))}}
		prg, ast, err := compile("derived belief "+quote(d.Belief)+": value", d.Value)
		if err != nil {
			return nil, err
		}
		if err := expr.WantBool(ast); err != nil {
			return nil, fmt.Errorf("derived belief %q: value %v", d.Belief, err)
		}
		c.value = prg
		names := make([]string, 0, len(d.Fields))
		for name := range d.Fields {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if name == "" || slices.Contains(reservedBeliefKeys, name) {
				return nil, fmt.Errorf("derived belief %q: field %q is a key the kernel reserves", d.Belief, name)
			}
			prg, _, err := compile("derived belief "+quote(d.Belief)+": field "+quote(name), d.Fields[name])
			if err != nil {
				return nil, err
			}
			c.Fields[name] = d.Fields[name]
			c.fields = append(c.fields, derivedField{name, prg})
		}
		out = append(out, c)
	}
	return out, nil
}

// evaluate computes the belief's value and fields over a result and the
// committed arguments; an error says why the derivation fails closed.
func (d *derivation) evaluate(ctx context.Context, result, args blackboard.Payload) (bool, blackboard.Payload, error) {
	act := map[string]any{varResult: map[string]any(result), varArgsD: map[string]any(args)}
	out, _, err := d.value.ContextEval(ctx, act)
	var value, ok bool
	if err == nil {
		value, ok = out.Value().(bool)
	}
	if !ok && deriveClosed() {
		if err != nil {
			return false, nil, fmt.Errorf("value %s could not be evaluated: %v", d.Value, err)
		}
		return false, nil, fmt.Errorf("value %s is not a bool", d.Value)
	}
	if !ok {
		value = true // the mutant: an unevaluable rule grounds the belief
	}
	fields := make(blackboard.Payload, len(d.fields)+2)
	for _, f := range d.fields {
		v, _, err := f.prg.ContextEval(ctx, act)
		if err == nil {
			fields[f.name], err = jsonValue(v)
		}
		if err != nil {
			if !deriveClosed() {
				continue
			}
			return false, nil, fmt.Errorf("field %s (%s) could not be evaluated: %v", f.name, d.Fields[f.name], err)
		}
	}
	return value, fields, nil
}

// jsonValue converts a CEL value into the JSON value a payload holds
// (numbers as float64, lists as []any, maps as map[string]any).
func jsonValue(v ref.Val) (any, error) {
	if types.IsError(v) {
		return nil, fmt.Errorf("%v", v)
	}
	pb, err := v.ConvertToNative(reflect.TypeFor[*structpb.Value]())
	if err != nil {
		return nil, fmt.Errorf("%s is not a JSON value: %v", v.Type().TypeName(), err)
	}
	return pb.(*structpb.Value).AsInterface(), nil
}

// derivedFrom is a derived belief's depends_on: the very result record it
// was computed from, by id, so that the kernel rests the belief on that
// record or refuses it (SUPERSEDED_EVIDENCE when a newer result of the
// kind was recorded meanwhile), and an action resting on it is refused
// once that record is superseded. Never the result kind, which the kernel
// would resolve to whatever observation is current when it decides.
func derivedFrom(e *entry, resultID string) []any {
	if !deriveExact() {
		return []any{e.resultKind()}
	}
	return []any{resultID}
}

// derive proposes the beliefs the job's tool derives from its result,
// recorded as resultID with payload output (without the gate's effect
// key), in declaration order. A failed derivation is recorded and
// reported; an error is the store's or the context's.
func (x *executor) derive(ctx context.Context, j *job, resultID string, output blackboard.Payload) ([]Derived, error) {
	if len(j.e.derives) == 0 {
		return nil, nil
	}
	out := make([]Derived, 0, len(j.e.derives))
	for i := range j.e.derives {
		d := &j.e.derives[i]
		cc := blackboard.Payload{"tool": j.e.nameValue, "derived_from": resultID, "action_id": j.act.ID, keyPolicy: x.g.policyValue}
		if ref, ok := j.cc[keyContext]; ok {
			cc[keyContext] = ref // the call's compiled context, checked when it was made
		}
		// failed records a derivation that fails closed: no belief, a
		// DERIVATION_FAILED record saying why.
		failed := func(detail string) error {
			dr, err := audit.Append(ctx, j.e.deriver.gov, audit.Entry{TraceID: j.trace, Kind: d.Belief,
				Outcome: audit.OutcomeRefused, Code: reason.DerivationFailed, Detail: detail, Context: cc})
			if err == nil {
				out = append(out, Derived{Belief: d.Belief, Code: reason.DerivationFailed, DecisionID: dr.ID, Detail: detail})
			}
			return err
		}
		value, fields, err := d.evaluate(ctx, output, j.args)
		if err != nil {
			if err := failed(err.Error()); err != nil {
				return out, err
			}
			continue
		}
		fields["value"] = value
		fields["depends_on"] = derivedFrom(j.e, resultID)
		dec, rec, err := j.e.deriver.Submit(ctx, kernel.Entry{TraceID: j.trace, Slot: blackboard.Beliefs, Kind: d.Belief,
			Payload: fields, InputRefs: []string{resultID}},
			func(dr audit.Entry) audit.Entry { dr.Context = cc; return dr })
		if errors.Is(err, blackboard.ErrInvalidPayload) || errors.Is(err, kernel.ErrPayloadTooLarge) {
			// The fields evaluated to what no payload holds: fail closed.
			if err := failed("the derived payload cannot be stored: " + err.Error()); err != nil {
				return out, err
			}
			continue
		}
		if err != nil {
			return out, err
		}
		dv := Derived{Belief: d.Belief, Code: dec.Code, Value: value, BeliefID: rec.ID, DecisionID: dec.ID}
		if !dec.Committed() {
			dv.Detail = dec.RootCause().Detail
			if dv.Detail == "" {
				dv.Detail = string(dec.RootCause().Code)
			}
		}
		out = append(out, dv)
	}
	return out, nil
}
