package toolgate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/failure"
	"github.com/blackboardkernel/bk/internal/kernelhook"
	"github.com/blackboardkernel/bk/reason"
)

// job is one committed action on its way to a result.
type job struct {
	e        *entry
	act      blackboard.Record // the committed action
	trace    string
	args     blackboard.Payload // read-only: shares its values with act's payload; an effect gets a copy
	real     blackboard.Payload // the call's real arguments, in memory only, when the tool masks fields and they are known
	key      string             // the idempotency key
	hash     string             // hex SHA-256 of key, for the once-keys the gate claims
	approval string             // the approval record that allowed it, when one did
	cc       blackboard.Payload
	failure  failure.Failure // the typed failure finish records, when known
	fn       EffectFunc      // the effect to run: the call's, else the tool's; nil for a caller-driven tool without the caller's
	// fresh: the action was committed by this very call, so nothing can
	// have recorded a result or started an attempt before the attempt this
	// driver claims (a driver that did would have claimed the attempt's
	// key first, and this driver's claim would fail)
	fresh bool
	// superseded: checkApproval found its escalation of an expired
	// approval beaten by a new decision, and looked again (once)
	superseded bool
}

// newJob prepares the execution of a committed action of tool e. The job
// takes act and cc as they are: the caller passes copies of its own (the
// kernel's and the store's answers, a decoded decision record) and does not
// use cc after.
func (x *executor) newJob(ctx context.Context, e *entry, act blackboard.Record, cc blackboard.Payload) (*job, error) {
	key := kernelhook.Namespace(x.k) + "/" + act.ID
	if e.once {
		switch ok, err := x.gov.OnceKeyOf(ctx, act.ID); {
		case err == nil:
			key = ok
		case !errors.Is(err, blackboard.ErrNotFound):
			return nil, err
		}
	}
	sum := sha256.Sum256([]byte(key))
	var hash [2 * sha256.Size]byte
	hex.Encode(hash[:], sum[:])
	return &job{e: e, act: act, trace: act.Provenance.TraceID, args: argsOf(act.Payload), key: key,
		hash: string(hash[:]), cc: cc, fn: e.Effect}, nil
}

// redrivable reports whether an attempt of the tool's effect that left no
// result may be started again: the world dedups it by its key (a once-key,
// or a key the tool declares honoured). A tool that rests on no belief is
// not taken for one that changes nothing: send_email may rest on none.
func (e *entry) redrivable() bool { return e.once || e.Idempotent }

// The once-keys the gate claims. They hash the idempotency key, which may
// be longer than a once-key may be.
func (j *job) attemptKey(n int) string {
	return "toolgate/effect/" + j.hash + "/attempt/" + strconv.Itoa(n)
}

func (j *job) resultKey() string { return "toolgate/effect/" + j.hash + "/result" }

// retireKey is the fence of the retirement of an action whose refusal
// for good holds its first attempt's key (see [executor.retireFence]).
func (j *job) retireKey() string { return "toolgate/effect/" + j.hash + "/retired" }

func approvalKey(approvalID string) string {
	sum := sha256.Sum256([]byte(approvalID))
	return "toolgate/approval/" + hex.EncodeToString(sum[:])
}

// effect is the Effect of a gate percept about the job.
func (j *job) effect(status string, attempt int, code reason.Code) audit.Effect {
	return audit.Effect{Status: status, Tool: j.e.Name, ActionID: j.act.ID, Key: j.key, Attempt: attempt, Code: code, Approval: j.approval}
}

// effectOf is the Effect of a percept the gate found by one of its own
// once-keys (zero when the record holds none).
func effectOf(rec blackboard.Record) audit.Effect {
	e, _ := audit.EffectOf(rec)
	return e
}

// payload is a percept's payload holding only the effect e.
func payload(e audit.Effect) blackboard.Payload {
	return blackboard.Payload{audit.KeyEffect: e.Encode()}
}

// toolWriter is the writer id under which the gate writes a tool's
// attempts and results; [audit.EffectOf] takes an effect for the gate's
// only under it.
func toolWriter(tool string) string { return "tool:" + tool }

// boxed is s as a payload value: b when b already holds s, else s boxed
// anew.
func boxed(b any, s string) any {
	if v, ok := b.(string); ok && v == s {
		return b
	}
	return s
}
