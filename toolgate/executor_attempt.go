package toolgate

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/failure"
	"github.com/blackboardkernel/bk/internal/kernelhook"
	pause "github.com/blackboardkernel/bk/internal/wait"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/mask"
	"github.com/blackboardkernel/bk/reason"
)

// lastAttempt returns the highest attempt number started for the job's
// key (0 when none) and its record; with upTo > 0 it looks no further.
func (x *executor) lastAttempt(ctx context.Context, j *job, upTo int) (int, blackboard.Record, error) {
	n, id := 0, ""
	for next := 1; next <= maxProbe && (upTo == 0 || next <= upTo); next++ {
		holder, err := x.gov.ClaimedBy(ctx, j.attemptKey(next))
		if errors.Is(err, blackboard.ErrNotFound) {
			break
		}
		if err != nil {
			return 0, blackboard.Record{}, err
		}
		n, id = next, holder
	}
	if n == 0 {
		return 0, blackboard.Record{}, nil
	}
	rec, err := x.reader.Get(ctx, id)
	return n, rec, err
}

// An attempt has one deadline, the lease_until_ms its record holds as the
// store recorded it. Its effect's context ends leaseMargin before that
// deadline, and no other driver takes the action over until leaseMargin
// after it: the gap between the two covers an effect that takes a moment
// to stop and clocks of two processes that differ a little. All three
// read the kernel's clock.
const maxLeaseMargin = 5 * time.Second

// leaseMargin is the margin for a lease: a tenth of it, at most
// maxLeaseMargin.
func leaseMargin(lease time.Duration) time.Duration { return min(lease/10, maxLeaseMargin) }

// leaseUntil returns the deadline recorded in an attempt.
func leaseUntil(att blackboard.Record) (time.Time, bool) {
	ms := effectOf(att).LeaseUntilMS
	if ms == 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(ms), true
}

// leaseOver reports whether the driver of an attempt has had its time: its
// recorded deadline plus the margin has passed (its effect has lost its
// context by then).
func (x *executor) leaseOver(att blackboard.Record) bool {
	until, ok := leaseUntil(att)
	if !ok {
		return true
	}
	if leaseDeadlineKept() {
		until = until.Add(leaseMargin(x.lease))
	}
	return kernelhook.Now(x.k).After(until)
}

// effectTime is how long the effect of the attempt just recorded may run:
// up to leaseMargin before its recorded deadline, as the kernel's clock
// reads now, after the write.
func (x *executor) effectTime(att blackboard.Record) time.Duration {
	until, ok := leaseUntil(att)
	if !ok {
		return 0
	}
	return until.Sub(kernelhook.Now(x.k)) - leaseMargin(x.lease)
}

// run drives the job to a result: it starts attempts (persisting each
// before the effect runs), retries retryable failures with backoff, waits
// for an attempt another driver holds, and records the outcome.
func (x *executor) run(ctx context.Context, j *job) (Result, error) {
	pol := j.e.Retry
	mine := 0 // the attempt this driver started last
	var lastErr error
	wait := pollStart
	for {
		var n int
		var att blackboard.Record
		if !j.fresh {
			if id, ok, err := x.resultOf(ctx, j); err != nil {
				return Result{ActionID: j.act.ID}, err
			} else if ok {
				return x.recorded(ctx, j, id)
			}
			var err error
			if n, att, err = x.lastAttempt(ctx, j, 0); err != nil {
				return Result{ActionID: j.act.ID}, err
			}
		}
		j.fresh = false
		if n > 0 && n != mine && !x.leaseOver(att) {
			// Another driver holds attempt n: wait for its result, or for
			// its lease to run out.
			if err := pause.Sleep(ctx, jitter(wait)); err != nil {
				return Result{ActionID: j.act.ID}, err
			}
			wait = min(2*wait, pollMax)
			continue
		}
		if n > 0 && !(n == mine && lastErr != nil) && !j.e.redrivable() && unkeyedOnce() {
			// Attempt n began and nobody saw it fail: its effect may have
			// taken place, and nothing outside dedups a second start. The
			// outcome is unknown, for a person to settle; never run again.
			return x.unknown(ctx, j, n, att)
		}
		if n >= pol.MaxAttempts {
			detail := "attempt " + strconv.Itoa(n) + " left no result"
			if n == mine && lastErr != nil {
				detail = x.errorText(ctx, j, lastErr)
			}
			return x.finish(ctx, j, n, att, nil, reason.RetriesExhausted, detail)
		}
		if j.fn == nil && callerEffectNeeded() {
			// A caller-driven tool's attempt n (begun and left by a
			// crashed caller: one whose effect may run again, or the
			// check above would have ended it EFFECT_UNKNOWN) or its
			// first: only the caller's retry, with the effect, starts it.
			return x.effectUnavailable(ctx, j), nil
		}
		if j.lostMasked() {
			// The store holds only the hashes of the masked arguments and
			// this driver was not given the real ones: never run the
			// effect with a hash. An attempt that began elsewhere is left
			// to a person; one not yet begun waits for Resume with them.
			if n > 0 {
				return x.unknown(ctx, j, n, att)
			}
			// Nothing is recorded: the action is unchanged, and Recover,
			// which comes back to it on every pass, adds no record.
			root := kernel.Cause{Code: reason.MaskedUnavailable, Record: j.act.ID,
				Detail: "the masked fields " + quote(strings.Join(j.e.Masked, ", ")) + " are not stored; Resume the call with its arguments"}
			return Result{Outcome: audit.OutcomeRefused, Code: reason.MaskedUnavailable, RootCause: root, ActionID: j.act.ID,
				Hint: x.hint(ctx, j.e, reason.MaskedUnavailable, root, "")}, nil
		}
		if j.approval == "" && n > 0 {
			j.approval = effectOf(att).Approval
		}
		actx, asp := x.g.tracer.Start(ctx, "toolgate.effect_attempt")
		rec, err := x.startAttempt(actx, j, n+1, att, lastErr)
		if err != nil {
			endAttempt(asp, j, n+1, err)
		}
		if errors.Is(err, blackboard.ErrDuplicateKey) {
			if _, err := x.gov.ClaimedBy(ctx, j.attemptKey(n+1)); errors.Is(err, blackboard.ErrNotFound) {
				// Not the attempt but the approval was taken: it was
				// consumed already, by another action's attempt.
				return x.refuseAction(ctx, j, reason.ApprovalRequired, "approval "+j.approval+" was already used")
			}
			continue // another driver started attempt n+1
		}
		if err != nil {
			return Result{ActionID: j.act.ID}, err
		}
		mine, att = n+1, rec
		x.attemptStarted(ctx, j)
		var out blackboard.Payload
		var effErr error
		if left, margin := x.effectTime(rec), leaseMargin(x.lease); leaseLeftChecked() && left < margin {
			// The write took most of the lease: an effect started now
			// would lose its context at once. The attempt counts as
			// used; the next one gets a lease of its own.
			effErr = Recordable(Retryable(fmt.Errorf("the attempt's write left %v of its lease, less than the margin %v: the effect was not started", left, margin)))
		} else {
			out, effErr = x.invoke(actx, j, mine, left)
		}
		endAttempt(asp, j, mine, effErr)
		if effErr == nil {
			if j.e.Expect != nil {
				if err := failure.Evaluate(out, *j.e.Expect); err != nil {
					j.failure = failure.Classify(err)
					return x.finish(ctx, j, mine, rec, nil, reason.EffectIncomplete, j.failure.Message())
				}
			}
			return x.finish(ctx, j, mine, rec, out, reason.EffectSucceeded, "")
		}
		if p := (*errPanicked)(nil); errors.As(effErr, &p) && panicUnknown() {
			// The effect may have acted before it panicked (the money
			// moved, then building its output blew up): its outcome is
			// unknown, never "failed".
			x.logPanic(ctx, j, mine, p)
			return x.panicked(ctx, j, mine, rec)
		}
		j.failure = typedFailure(effErr)
		if err := ctx.Err(); err != nil {
			// The attempt stays without a result; once its lease is over,
			// Recover (or another Execute) starts the next, with the same key.
			return Result{ActionID: j.act.ID}, err
		}
		if past := (errRanPastLease{}); errors.As(effErr, &past) {
			return x.unknown(ctx, j, mine, rec)
		}
		if !isRetryable(effErr) {
			return x.finish(ctx, j, mine, rec, nil, reason.EffectFailed, x.errorText(ctx, j, effErr))
		}
		if mine >= pol.MaxAttempts {
			return x.finish(ctx, j, mine, rec, nil, reason.RetriesExhausted, x.errorText(ctx, j, effErr))
		}
		lastErr = effErr
		if err := pause.Sleep(ctx, backoff(pol, mine)); err != nil {
			return Result{ActionID: j.act.ID}, err
		}
	}
}

// startAttempt persists attempt n before its effect runs: a percept
// claiming the attempt's once-key (and, for the first attempt of an
// approved action, the approval's) in the same write, so that no two
// drivers start the same attempt and no approval is used twice.
func (x *executor) startAttempt(ctx context.Context, j *job, n int, prev blackboard.Record, prevErr error) (blackboard.Record, error) {
	eff := j.effect(audit.StatusAttempted, n, "")
	eff.LeaseUntilMS = kernelhook.Now(x.k).Add(x.lease).UnixMilli()
	refs := make([]string, 1, 3)
	refs[0] = j.act.ID
	keys := []string{j.attemptKey(n)}
	if prev.ID != "" {
		refs = append(refs, prev.ID)
		if prevErr != nil {
			eff.PreviousError = x.errorText(ctx, j, prevErr)
		}
	}
	if n == 1 && j.approval != "" {
		refs = append(refs, j.approval)
		keys = append(keys, approvalKey(j.approval))
	}
	w, err := j.e.handle.Write(ctx, kernel.Entry{TraceID: j.trace, Slot: blackboard.Percepts, Kind: audit.KindAttempt,
		Payload: payload(eff), InputRefs: refs, OnceKeys: keys}, nil)
	return w.rec, err
}

// invoke calls the effect for attempt n, with a context that ends after
// left (see effectTime). A panic is recovered as an [errPanicked], with
// its stack: run records its outcome as unknown. Running out of the lease
// is a failure a retry may fix.
func (x *executor) invoke(ctx context.Context, j *job, n int, left time.Duration) (out blackboard.Payload, err error) {
	if !leaseDeadlineKept() {
		left = x.lease // a full lease from after the write
	}
	ectx, cancel := context.WithTimeout(ctx, left)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			if !panicUnknown() {
				out, err = nil, fmt.Errorf("effect panicked: %v", r)
				return
			}
			out, err = nil, &errPanicked{value: r, stack: debug.Stack()}
		}
	}()
	inv := Invocation{Key: j.key, Tool: j.e.Name, ActionID: j.act.ID, TraceID: j.trace, Attempt: n, Args: j.effectArgs()}
	out, err = j.fn(context.WithValue(ectx, invocationKey{}, inv), inv)
	if err != nil && ctx.Err() == nil && errors.Is(ectx.Err(), context.DeadlineExceeded) && !isRetryable(err) {
		if !j.e.redrivable() && unkeyedOnce() {
			// It may have acted before its context ended; a retry could
			// act twice.
			return nil, errRanPastLease{err}
		}
		err = Retryable(fmt.Errorf("effect ran past its lease: %w", err))
	}
	return out, err
}

// effectUnavailable is the answer for an action of a caller-driven tool
// that was to start without the caller's effect: nothing is recorded, so
// its approval, once-key and retry key stay for the caller's retry, and
// Recover, which comes back to it on every pass, adds no record.
func (x *executor) effectUnavailable(ctx context.Context, j *job) Result {
	root := kernel.Cause{Code: reason.EffectUnavailable, Record: j.act.ID,
		Detail: quote(j.e.Name) + " is caller-driven: its caller runs it, by calling it again under the same retry key with its effect"}
	return Result{Outcome: audit.OutcomeRefused, Code: reason.EffectUnavailable, RootCause: root, ActionID: j.act.ID,
		Hint: x.hint(ctx, j.e, reason.EffectUnavailable, root, "")}
}

// errRanPastLease is the error of an effect without a key the world
// honours that failed after its context ran out: whether it acted is
// unknown.
type errRanPastLease struct{ err error }

func (e errRanPastLease) Error() string { return "effect ran past its lease: " + e.err.Error() }
func (e errRanPastLease) Unwrap() error { return e.err }

// unknown records that attempt n of an effect that may run at most once
// began and left no result this driver saw: whether it took effect is
// unknown. The record claims the result key, so nothing starts the effect
// again; a person settles it.
func (x *executor) unknown(ctx context.Context, j *job, n int, att blackboard.Record) (Result, error) {
	detail := "attempt " + strconv.Itoa(n) + " began and left no result; " + quote(j.e.Name) +
		" has no once-key and is not Idempotent, so it is not started again: check whether it took effect"
	j.failure = failure.New(failure.StatusUnknown, string(reason.EffectUnknown)+": "+detail).WithRetryable(false)
	return x.finish(ctx, j, n, att, nil, reason.EffectUnknown, detail)
}

// panicked records that the effect of attempt n panicked: it may have
// acted first, so the outcome is EFFECT_UNKNOWN (typed FAILED_UNKNOWN,
// not retryable), the result key is claimed and the action keeps its
// once-key, so that nothing starts the effect again and a person settles
// it. The record holds no word of the panic's value: the operator's log
// has it, with the stack ([Gate.logPanic]).
func (x *executor) panicked(ctx context.Context, j *job, n int, att blackboard.Record) (Result, error) {
	detail := "attempt " + strconv.Itoa(n) + " panicked; it may have taken effect before it did, so " + quote(j.e.Name) +
		" is not started again: check whether it took effect"
	j.failure = failure.New(failure.StatusUnknown, string(reason.EffectUnknown)+": "+detail).WithRetryable(false)
	return x.finish(ctx, j, n, att, nil, reason.EffectUnknown, detail)
}

// finish records the job's result, claiming the result key, with its
// decision record in the same write: a success under the tool's result
// kind (the output at the top level), anything else as a failure. A
// result another driver recorded first wins and is returned.
func (x *executor) finish(ctx context.Context, j *job, n int, att blackboard.Record, out blackboard.Payload, code reason.Code, detail string) (Result, error) {
	refs := make([]string, 1, 2)
	refs[0] = j.act.ID
	if att.ID != "" {
		refs = append(refs, att.ID)
	}
	var approvals []string
	if j.approval != "" {
		approvals = []string{j.approval}
	}
	entry := kernel.Entry{TraceID: j.trace, Slot: blackboard.Percepts, InputRefs: refs, OnceKeys: []string{j.resultKey()}}
	// The record's context is the call's, with top-level keys added: a
	// shallow copy leaves j.cc as it was (the kernel copies what it stores).
	dr := audit.Entry{Kind: j.e.action(), Approvals: approvals, Context: maps.Clone(j.cc)}
	dr.Context["attempt"] = float64(n) // as the kernel stores it
	if code == reason.EffectSucceeded {
		if _, reserved := out[audit.KeyEffect]; reserved {
			return x.finish(ctx, j, n, att, nil, reason.OutputInvalid, "the output uses the reserved key "+quote(audit.KeyEffect))
		}
		payload, err := x.g.mask.payload(ctx, j.trace, out.Clone(), j.e.Masked)
		if err != nil {
			return x.finish(ctx, j, n, att, nil, reason.OutputInvalid, "the output cannot be masked: a masked field is not a JSON value")
		}
		if payload == nil {
			payload = blackboard.Payload{}
		}
		payload[audit.KeyEffect] = j.effect(audit.StatusSucceeded, n, code).Encode()
		entry.Kind, entry.Payload, entry.TTL = j.e.resultKind(), payload, j.e.ResultTTL
		dr.Outcome, dr.Code = audit.OutcomeExecuted, code
	} else {
		eff := j.effect(audit.StatusFailed, n, code)
		eff.Error = detail
		dr.Context["error"] = detail
		if f := j.failure; f.Status() != "" {
			eff.ExecutionStatus, eff.Category, eff.Retryable = f.Status(), f.Category(), f.Retryable()
			dr.Context["execution_status"], dr.Context["category"] = string(f.Status()), string(f.Category())
		}
		entry.Kind, entry.Payload = audit.KindFailed, payload(eff)
		dr.Outcome, dr.Code = audit.OutcomeFailed, code
	}
	w, err := j.e.handle.Write(ctx, entry, func(rec blackboard.Record) audit.Entry {
		r := audit.ForRecord(rec, dr.Kind, dr.Outcome, dr.Code)
		r.Approvals, r.Context = dr.Approvals, dr.Context
		dr.ID = r.ID // the decision's id, for the Result
		return r
	})
	if err == nil {
		status := audit.StatusSucceeded
		if code != reason.EffectSucceeded {
			status = audit.StatusFailed
		}
		x.effectRecorded(ctx, j, status, code)
	}
	switch {
	case errors.Is(err, blackboard.ErrDuplicateKey):
		return x.recordedByKey(ctx, j)
	case code == reason.EffectSucceeded && (errors.Is(err, blackboard.ErrInvalidPayload) || errors.Is(err, kernel.ErrPayloadTooLarge)):
		return x.finish(ctx, j, n, att, nil, reason.OutputInvalid, outputProblem(err))
	case err != nil:
		return Result{ActionID: j.act.ID}, err
	}
	res, err := x.result(ctx, j, w.rec, dr.ID)
	if err == nil && code == reason.EffectSucceeded {
		// Derived beliefs rest on the output as stored (masked); the
		// caller gets its real values.
		res.Derived, err = x.derive(ctx, j, w.ID, res.Output)
		if len(j.e.Masked) > 0 && masksStored() {
			res.stored, res.Output = res.Output, out.Clone()
		}
	}
	return res, err
}

// outputProblem words why an output cannot be recorded, without the
// store's words, which may quote a value of it.
func outputProblem(err error) string {
	if errors.Is(err, kernel.ErrPayloadTooLarge) {
		return "the output cannot be recorded: it is over the store's size limit"
	}
	return "the output cannot be recorded: it is not a JSON value the store keeps"
}

// maxBackoffFactor bounds the longest wait between attempts: this many
// times the policy's Backoff.
const maxBackoffFactor = 25

// backoff is the wait after attempt n failed: Backoff doubled n-1 times,
// capped at maxBackoffFactor times Backoff, drawn from its upper half.
func backoff(p RetryPolicy, n int) time.Duration {
	limit := p.Backoff * maxBackoffFactor
	d := p.Backoff
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	return jitter(min(d, limit))
}

// jitter draws a wait from [d/2, d].
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d-d/2+1)
}

// effectArgs are the arguments an effect is called with: a copy of the
// committed ones, with the real values of masked fields.
func (j *job) effectArgs() blackboard.Payload {
	if j.real != nil {
		return unmasked(j.args, j.real, j.e.Masked)
	}
	return j.args.Clone()
}

// lostMasked reports whether the committed arguments hold a masked value
// whose real value this job does not have.
func (j *job) lostMasked() bool {
	for _, f := range j.e.Masked {
		if !mask.Masked(j.args[f]) {
			continue
		}
		if v, ok := j.real[f]; !ok || mask.Masked(v) {
			return true // a hash given back is no real value
		}
	}
	return false
}

// maskedGiven is the masked fields of arguments given to run that hold a
// real value: one already masked (copied from the store) is compared as
// it is, and leaves the job without the real value.
func (e *entry) maskedGiven(given blackboard.Payload) []string {
	var out []string
	for _, f := range e.Masked {
		if v, has := given[f]; has && !mask.Masked(v) {
			out = append(out, f)
		}
	}
	return out
}
