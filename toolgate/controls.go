package toolgate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// The recorded safety modes: the "mode" of a run controls record, which
// [Controls.ReadOnly] reads and writes.
const (
	modeNormal   = "normal"
	modeReadOnly = "read_only"
)

// controlsError is the error of a [Gate.Restrict] that would loosen the
// trace's run controls: no longer read-only, or without a tool they
// prohibit. It wraps [blackboard.ErrPermission]: the owner may tighten a
// trace's controls, not lift them. Nothing was recorded.
type controlsError struct {
	TraceID string
	// Current is what the trace's controls were when Restrict read them.
	Current Controls
	// Given is what Restrict was given.
	Given Controls
}

// Error says what the given controls would loosen.
func (e *controlsError) Error() string {
	var lost []string
	if e.Current.ReadOnly && !e.Given.ReadOnly {
		lost = append(lost, "mode "+modeReadOnly)
	}
	for _, t := range e.Current.Prohibited {
		if !slices.Contains(e.Given.Prohibited, t) {
			lost = append(lost, "prohibited tool "+quote(t))
		}
	}
	return fmt.Sprintf("toolgate: run controls may only be tightened: trace %q: the given controls drop %s", e.TraceID, strings.Join(lost, ", "))
}

// Unwrap returns [blackboard.ErrPermission].
func (e *controlsError) Unwrap() error { return blackboard.ErrPermission }

// Controls are a trace's run controls: its safety mode and the tools it
// prohibits. The owner records them with [Gate.Restrict]; the gate
// enforces them on every call, on every start of an action not yet
// started, and in [Gate.Surface]. A zero Controls is the normal mode with
// nothing prohibited.
type Controls struct {
	// ReadOnly lets no effectful tool run: any tool that does not declare
	// [Tool.ReadOnly], whatever it requires (an email rests on no belief
	// and is still an effect). Such a call is refused with READ_ONLY_MODE
	// and [Gate.Surface] omits the tool. The record holds it as the mode
	// "read_only" (else "normal").
	ReadOnly bool `json:"read_only,omitempty"`
	// Prohibited names registered tools the trace may not call, in the
	// gate's registration order when the gate returns them.
	Prohibited []string `json:"prohibited,omitempty"`
}

// controlsKey is the once-key that records one part of a trace's
// controls: "read_only", or "prohibit" and a tool's name. The gate looks
// a control up by its key, so that the check costs the same however long
// the trace; a key once claimed stays, so controls only tighten. Neither
// a trace id nor a tool name holds a NUL (checkTrace, isToolName).
func controlsKey(traceID, part, tool string) string {
	// On the stack for the usual lengths: a call looks one up.
	var buf [256]byte
	b := append(append(append(append(append(buf[:0], traceID...), 0), part...), 0), tool...)
	sum := sha256.Sum256(b)
	const prefix = "toolgate/controls/"
	var out [len(prefix) + 2*sha256.Size]byte
	copy(out[:], prefix)
	hex.Encode(out[len(prefix):], sum[:])
	return string(out[:])
}

const (
	partReadOnly = "read_only"
	partProhibit = "prohibit"
	partVersion  = "version"
)

// claimed reports whether key is claimed in the kernel's namespace.
func (x *executor) claimed(ctx context.Context, key string) (bool, error) {
	_, err := x.gov.ClaimedBy(ctx, key)
	if errors.Is(err, blackboard.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// controls is [Gate.Controls].
func (x *executor) controls(ctx context.Context, traceID string) (Controls, error) {
	if err := checkTrace(traceID); err != nil {
		return Controls{}, invalidCall("trace id: %v", err)
	}
	var c Controls
	if r, err := x.restricted(ctx, traceID); err != nil || !r {
		return c, err
	}
	ro, err := x.claimed(ctx, controlsKey(traceID, partReadOnly, ""))
	if err != nil {
		return Controls{}, err
	}
	c.ReadOnly = ro
	for _, e := range x.g.order {
		p, err := x.claimed(ctx, controlsKey(traceID, partProhibit, e.Name))
		if err != nil {
			return Controls{}, err
		}
		if p {
			c.Prohibited = append(c.Prohibited, e.Name)
		}
	}
	return c, nil
}

// restrict is [Gate.Restrict].
func (x *executor) restrict(ctx context.Context, traceID string, c Controls) error {
	for _, t := range c.Prohibited {
		if x.g.tools[t] == nil {
			return invalidCall("run controls: no registered tool %s", escapedTool(t))
		}
	}
	for attempt := 0; attempt < 8; attempt++ {
		cur, err := x.controls(ctx, traceID)
		if err != nil {
			return err
		}
		var keys []string
		if controlsTighten() {
			if cur.ReadOnly && !c.ReadOnly {
				return &controlsError{TraceID: traceID, Current: cur, Given: cloneControls(c)}
			}
			for _, t := range cur.Prohibited {
				if !slices.Contains(c.Prohibited, t) {
					return &controlsError{TraceID: traceID, Current: cur, Given: cloneControls(c)}
				}
			}
		}
		if c.ReadOnly && !cur.ReadOnly {
			keys = append(keys, controlsKey(traceID, partReadOnly, ""))
		}
		next := Controls{ReadOnly: c.ReadOnly}
		for _, e := range x.g.order {
			if slices.Contains(c.Prohibited, e.Name) {
				next.Prohibited = append(next.Prohibited, e.Name)
				if !slices.Contains(cur.Prohibited, e.Name) {
					keys = append(keys, controlsKey(traceID, partProhibit, e.Name))
				}
			}
		}
		if len(keys) == 0 {
			return nil
		}
		// The number of controls recorded is the controls' version: the
		// write also claims the key of the version it follows, so that of
		// Restricts that read the same controls one writes and the others
		// read again, and each record holds the controls in full.
		version := len(cur.Prohibited)
		if cur.ReadOnly {
			version++
		}
		keys = append(keys, controlsKey(traceID, partVersion, strconv.Itoa(version)))
		mode := modeNormal
		if next.ReadOnly {
			mode = modeReadOnly
		}
		prohibited := make([]any, len(next.Prohibited))
		for i, t := range next.Prohibited {
			prohibited[i] = t
		}
		_, err = x.planner.gov.Append(ctx, kernel.Follow{Role: blackboard.RoleKernel, Entry: kernel.Entry{
			TraceID: traceID, Slot: blackboard.Evidence, Kind: audit.KindControls, OnceKeys: keys,
			Payload: blackboard.Payload{"mode": mode, "prohibited": prohibited, keyPolicy: x.g.policyHash},
		}})
		if !errors.Is(err, blackboard.ErrDuplicateKey) {
			return err
		}
	}
	return fmt.Errorf("%w: run controls of trace %q: too much contention", blackboard.ErrConflict, traceID)
}

func cloneControls(c Controls) Controls {
	c.Prohibited = slices.Clone(c.Prohibited)
	return c
}

// restricted reports whether the trace has run controls at all: the first
// Restrict of a trace claims the key of version 0.
func (x *executor) restricted(ctx context.Context, traceID string) (bool, error) {
	return x.claimed(ctx, controlsKey(traceID, partVersion, "0"))
}

// forbidden returns the code and detail under which the trace's run
// controls forbid tool e, or "" when they do not. In a trace without
// controls it looks up one once-key, else at most three: a read-only tool
// is never refused for the mode.
func (x *executor) forbidden(ctx context.Context, traceID string, e *entry) (reason.Code, string, error) {
	if r, err := x.restricted(ctx, traceID); err != nil || !r {
		return "", "", err
	}
	p, err := x.claimed(ctx, controlsKey(traceID, partProhibit, e.Name))
	if err != nil || p {
		return reason.ToolProhibited, "the trace's run controls prohibit " + quote(e.Name), err
	}
	if !e.effectful() {
		return "", "", nil
	}
	ro, err := x.claimed(ctx, controlsKey(traceID, partReadOnly, ""))
	if err != nil || ro {
		return reason.ReadOnlyMode, "the trace is read-only and " + quote(e.Name) + " is effectful", err
	}
	return "", "", nil
}

// controlsValidator checks a tool's action against the trace's run
// controls as the kernel decides it: the latest run_controls record of the
// trace state the decision reads (the trace's heads, so the cost does not
// grow with the trace). Every Restrict writes one in the batch that claims
// its keys, holding the controls in full (the version key orders them),
// so the latest is the trace's controls; a trace without one has none. A
// latest record another role wrote (an evidence handle may write any
// kind) hides the gate's: the check then fails closed, refusing every
// tool.
type controlsValidator struct{ g *Gate }

// Validate implements kernel.Validator.
func (v controlsValidator) Validate(_ context.Context, c kernel.Candidate) kernel.Cause {
	if !controlsDecide() || c.Proposal().Slot != blackboard.Actions {
		return kernel.Cause{}
	}
	e := v.g.tools[c.Proposal().Kind]
	if e == nil {
		return kernel.Cause{}
	}
	rec, ok := c.Committed(blackboard.Evidence, audit.KindControls)
	if !ok {
		return kernel.Cause{}
	}
	if rec.Provenance.Role != blackboard.RoleKernel {
		return kernel.Cause{Code: reason.ToolProhibited, Rule: audit.KindControls,
			Detail: "the trace's latest run controls record " + rec.ID + " was not written by the gate: every tool is refused"}
	}
	if p, _ := rec.Payload["prohibited"].([]any); slices.Contains(p, any(e.Name)) {
		return kernel.Cause{Code: reason.ToolProhibited, Rule: audit.KindControls, Detail: "the trace's run controls prohibit " + quote(e.Name)}
	}
	if m, _ := rec.Payload["mode"].(string); m == modeReadOnly && e.effectful() {
		return kernel.Cause{Code: reason.ReadOnlyMode, Rule: audit.KindControls, Detail: "the trace is read-only and " + quote(e.Name) + " is effectful"}
	}
	return kernel.Cause{}
}
