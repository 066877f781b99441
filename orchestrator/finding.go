package orchestrator

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/blackboardkernel/bk/failure"
	"github.com/blackboardkernel/bk/reason"
)

// Assertion is one statement of a [Finding]: what it is about, its value, the
// records it rests on and how sure the worker is.
type Assertion struct {
	// Kind names what the assertion is about ("endpoint", "patch",
	// "test_result"); contracts require assertions by kind.
	Kind string `json:"kind"`
	// Value is the assertion's content as data (a URL, a map of fields).
	Value any `json:"value,omitempty"`
	// Evidence are ids of records of the trace the assertion rests on: the
	// percept of a tool result, a committed belief. Each must exist in
	// the trace.
	Evidence []string `json:"evidence,omitempty"`
	// Confidence is the worker's confidence in the assertion, in [0, 1].
	Confidence float64 `json:"confidence"`
}

// Finding is a worker's output as it crosses to the orchestrator and the
// next workers: typed assertions and typed failures, never prose the next
// worker must interpret. A worker hands it over with
// [StepContext.Report].
type Finding struct {
	// WorkerID and Round are set by the orchestrator.
	WorkerID   string      `json:"worker"`
	Round      int         `json:"round"`
	Assertions []Assertion `json:"assertions,omitempty"`
	// Failures are failures the worker met and could not repair. A
	// finding that holds any is routed by the repair router (the first
	// one decides), not checked against the contract.
	Failures []failure.Failure `json:"-"`
}

// Codes of a refused finding.
const ()

// ErrFindingRefused is wrapped by the [Error] of every refused finding,
// whose Code says why.
var ErrFindingRefused = errors.New("orchestrator: finding refused")

// refusal is the Error refusing a finding: the code, the assertion kind
// it is about ("" for none), and what is wrong.
func refusal(code reason.Code, assertion, format string, a ...any) *Error {
	detail := fmt.Sprintf(format, a...)
	err := fmt.Errorf("%w (%s): %s", ErrFindingRefused, code, detail)
	if assertion != "" {
		err = fmt.Errorf("%w (%s), assertion %q: %s", ErrFindingRefused, code, assertion, detail)
	}
	return &Error{Phase: PhaseFinding, Code: code, Err: err}
}

// FindingContract is an epistemic output contract: what a worker's finding must
// hold before the orchestrator accepts it. The zero Contract still
// requires well-formed assertions whose evidence resolves.
type FindingContract struct {
	// Require lists the assertion kinds the finding must hold.
	Require []string
	// MinConfidence is the least confidence each assertion must have.
	MinConfidence float64
	// Evidence requires every assertion to cite at least one record.
	Evidence bool
}

// check checks f against the contract, in this order: every assertion well
// formed (a kind, a confidence in [0, 1]) and every failure typed, the
// required kinds present, each assertion's confidence at least MinConfidence,
// evidence cited when required, and every evidence id resolved (resolve
// reports whether a record id exists in the trace). It returns nil or the
// first refusal, an [*Error] wrapping [ErrFindingRefused] with its Code.
func (c FindingContract) check(f Finding, resolve func(id string) bool) *Error {
	refuse := refusal
	for i, cl := range f.Assertions {
		if cl.Kind == "" {
			return refuse(reason.FindingInvalid, "", "assertion %d has no kind", i)
		}
		if math.IsNaN(cl.Confidence) || cl.Confidence < 0 || cl.Confidence > 1 {
			return refuse(reason.FindingInvalid, cl.Kind, "confidence %v outside [0, 1]", cl.Confidence)
		}
	}
	for i, fl := range f.Failures {
		if fl.Status() == "" {
			return refuse(reason.FindingInvalid, "", "failure %d is untyped", i)
		}
	}
	for _, kind := range c.Require {
		if !slices.ContainsFunc(f.Assertions, func(cl Assertion) bool { return cl.Kind == kind }) {
			return refuse(reason.FindingMissingAssertion, kind, "the contract requires a %q assertion", kind)
		}
	}
	for _, cl := range f.Assertions {
		if cl.Confidence < c.MinConfidence {
			return refuse(reason.FindingLowConfidence, cl.Kind, "confidence %v below the contract's %v", cl.Confidence, c.MinConfidence)
		}
		if c.Evidence && len(cl.Evidence) == 0 {
			return refuse(reason.FindingNoEvidence, cl.Kind, "the assertion cites no record")
		}
		for _, id := range cl.Evidence {
			if resolve == nil || !resolve(id) {
				return refuse(reason.FindingUnresolvedEvidence, cl.Kind, "evidence %q is not a record of the trace", id)
			}
		}
	}
	return nil
}
