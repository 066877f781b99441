package toolgate

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/failure"
	"github.com/blackboardkernel/bk/kernel"
)

// Tool is a tool registered with the gate: what the model is shown, how
// the kernel gates a call of it, and the effect that runs when a call is
// allowed.
type Tool struct {
	// Name is the tool's name as models call it.
	Name string
	// Description is shown to models with the name.
	Description string
	// Parameters is the JSON Schema of the arguments, shown to models: an
	// object schema ({"type": "object", "properties": {...}, "required":
	// [...]}). Any schema github.com/google/jsonschema-go resolves is
	// accepted (bounds, patterns, nested objects, arrays, $defs; no remote
	// $ref), and a call's arguments must fit it (INVALID_ARGUMENTS, naming
	// the argument). Nil means an object with no declared properties. [Func]
	// generates it from a Go type.
	Parameters json.RawMessage
	// Requires are the belief kinds a call rests on: they become the
	// action's requires_beliefs, so the kernel commits the call only while
	// each is committed, true and resting on current evidence. A tool with
	// none (an observation such as lookup_order) has its action type
	// registered as a safe, repeatable action ([Config.Tools]); whether it
	// changes anything outside is [Tool.ReadOnly]'s to say.
	Requires []string
	// Bindings tie the arguments of a tool that rests on beliefs to the
	// observations those beliefs rest on ([Binding]): order_id equal to
	// the order percept's, amount at most its amount. A call whose
	// arguments do not follow is refused (ARGUMENT_NOT_BOUND), so that a
	// belief about one order cannot ground a call about another. A tool
	// with Requires must declare Bindings or Unbound; [New] refuses one
	// that declares neither. A read-only tool has none.
	Bindings []Binding
	// Unbound says that the arguments of a tool that rests on beliefs
	// really follow from no observation (an escalation whose text is the
	// model's own, say), so that it needs no Bindings. It is the explicit
	// opt-out; leave it false whenever an argument names or sizes
	// something an observation shows.
	Unbound bool
	// Scope ties arguments to the request the trace serves
	// ([Gate.RecordRequest]): each argument named (a top-level property,
	// a string) must be one of the request's resources of the type given,
	// or, for the type "principal", the request's principal itself (a
	// customer_id that must be the customer's own; a request's Resources
	// may not use that type):
	//
	//	Scope: map[string]string{"order_id": "order", "customer_id": "principal"}
	//
	// A call that breaks it, or one in a trace with no request recorded,
	// is refused with OUT_OF_SCOPE before the kernel decides it (and the
	// kernel checks it again as it decides), so that a refund of an order
	// the ticket is not about never runs, whatever the model looked up.
	// An effectful tool (one that does not declare ReadOnly) must declare
	// Scope or Unscoped; [New] refuses one that declares neither. A masked
	// argument cannot be scoped.
	Scope map[string]string
	// Unscoped says that the tool acts on nothing a request must concern
	// (an escalation to a person, a note to the log), so that it needs no
	// Scope. It is the explicit opt-out, as Unbound is for Bindings; leave
	// it false whenever an argument names whose thing is acted on.
	Unscoped bool
	// Once, when set, is the once-key of the tool's action type: of the
	// calls with equal values of its fields, at most Limit ever commit in
	// the kernel's namespace, across traces and processes; the others are
	// refused (DUPLICATE_ACTION). It is also the effect's idempotency key
	// ([Invocation.Key]). Each field must be a declared argument (unless
	// Percept is set): &kernel.OnceKey{Fields: []string{"order_id"}}
	// refunds each order once, whatever the trace or process.
	Once *kernel.OnceKey
	// Idempotent says that the external system honours [Invocation.Key]
	// although the tool has no Once (the key is then the action's own),
	// as a payment API honours an idempotency key, or that repeating the
	// effect does no harm (a lookup). A tool with Once or Idempotent has an
	// attempt a crash left without a result started again, with the same
	// key. Any other tool's effect is started at most once per call: such
	// an attempt is recorded as EFFECT_UNKNOWN and left to a person (see
	// [Gate.Recover]).
	Idempotent bool
	// ReadOnly declares that the tool changes nothing outside the agent
	// (a lookup, a search): in a read-only trace ([Controls.ReadOnly]) only
	// such tools are shown and run. A tool that does not declare it is
	// effectful there, whatever it requires, so that the mode fails
	// closed: an email that rests on no belief is still an effect.
	ReadOnly bool
	// Result is the percept kind a successful result is recorded under,
	// so that beliefs can depend on it (lookup_order's result is an
	// "order" percept). Empty means Name + "_result".
	Result string
	// ResultTTL, when positive, is the result percept's time to live:
	// after it a belief resting on the result is STALE_EVIDENCE and the
	// model is told to call the tool again.
	ResultTTL time.Duration
	// Effect runs the tool. It is called only for an allowed (and, if the
	// policy says so, approved) action, with the action's idempotency key.
	// Nil makes the tool caller-driven: the tool is run by the caller (an
	// agent framework that runs its own tools), which hands the gate each
	// call's effect ([Call.Effect]); nothing else ever runs it. See
	// docs/effects.md, "Caller-driven tools".
	Effect EffectFunc
	// Approval says when a call needs a person's approval before it runs:
	// "" never, "true" on every call, else a CEL expression over the
	// arguments, and a call for which it is true needs approval. The
	// expression sees args (the arguments as a map), each top-level
	// property the parameters schema declares by its name (when the name
	// is a CEL identifier and not args, caller or intent), caller and
	// intent (strings): "amount > 500", "args.currency != 'EUR'". It is
	// compiled by [New]; one that does not compile, or is not of type
	// bool, is an error there. On a call where it cannot be evaluated (a
	// missing argument, a type error) or does not yield a bool, the call
	// needs approval: the rule fails closed.
	Approval string
	// Retry bounds the attempts of the effect; a zero field takes its
	// default (3 attempts, 200ms).
	Retry RetryPolicy
	// Expect, when set, is what an output must hold to count as a success
	// ([failure.Evaluate]): its own execution_status or error, per-resource
	// outcomes, data where data is expected, required fields. An output
	// that fails it is a partial success: it is recorded as a failure
	// (EFFECT_INCOMPLETE) with its typed status, never as the tool's
	// result, and the effect is not retried.
	Expect *failure.Expect
	// Derives are the beliefs a successful result grounds ([Derive]): the
	// gate proposes each after recording the result, and registers each
	// kind with the kernel as resting on the result kind.
	Derives []Derive
	// Masked names the top-level argument and output fields whose values
	// the store must never hold (an email address, a card number): the
	// gate replaces each with its keyed hash ([mask.Hash], [Config.MaskKey])
	// before anything is written, so that the action, its decision
	// records, its result and what the inspector shows hold the hash.
	// Equal values give equal hashes, so once-keys, the approval digest,
	// retry keys and "equal" bindings still bind to the real values; an
	// "at_most" or "at_least" binding on a masked argument is refused by New.
	// The effect gets the real arguments, which the gate holds in memory
	// for the call only, and the caller gets the real output; an effect
	// started later without them (after a crash, or by [Gate.Execute]
	// without the arguments) is not run with hashes: see docs/effects.md,
	// "Masked fields".
	Masked []string

	// defErr is why [Func] could not define the tool; New reports it.
	defErr error
}

// EffectFunc performs a tool's effect. It returns the output the model is
// given (and the result percept records), or an error: one wrapped with
// [Retryable] is retried under the tool's [RetryPolicy], any other fails
// the call at once. The function must pass inv.Key to the external system
// as its idempotency key: the gate starts an attempt only after recording
// it, but a crash after the effect and before its result is recorded makes
// the gate call the function again, with the same key.
type EffectFunc func(ctx context.Context, inv Invocation) (blackboard.Payload, error)

// Invocation is what an effect is called with.
type Invocation struct {
	// Key is the idempotency key: the same for every attempt of one
	// action, in every process, and different for every other action. It
	// is the kernel's once-key when the action type has one, else
	// "<namespace>/<action id>". It may be long (trace ids can be); an API
	// with a length limit can be given a hash of it.
	Key string
	// Tool is the tool's name.
	Tool string
	// ActionID is the committed action being run; TraceID its trace.
	ActionID string
	TraceID  string // the action's trace
	// Attempt counts from 1; a retry or a re-drive after a crash has a
	// higher number and the same Key.
	Attempt int
	// Args are the committed arguments (a copy).
	Args blackboard.Payload
}

// invocationKey is the context key of the [Invocation] an effect runs.
type invocationKey struct{}

// InvocationFrom returns the [Invocation] the effect running in ctx was
// called with: a framework's own tool, run as a call's effect
// ([Call.Effect]) through code that passes it only a context, reads its
// idempotency key here. ok is false outside an effect.
func InvocationFrom(ctx context.Context) (inv Invocation, ok bool) {
	inv, ok = ctx.Value(invocationKey{}).(Invocation)
	return inv, ok
}

// decodeArgs unmarshals the arguments p into v (a pointer to a struct).
func decodeArgs(p blackboard.Payload, v any) error {
	b, err := json.Marshal(map[string]any(p))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// RetryPolicy bounds the attempts of an effect.
type RetryPolicy struct {
	// MaxAttempts is how many times the effect may be started for one
	// action, the first included; zero means 3.
	MaxAttempts int
	// Backoff is the wait before the second attempt; each later wait
	// doubles, up to 25 times Backoff (5s with the default), so that the
	// longest wait scales with the first. The wait is drawn uniformly
	// from [d/2, d] (jitter), and a cancelled context ends it. Zero means
	// 200ms.
	Backoff time.Duration
}

// The retry policy of a tool that sets none. They are constants, not a
// package variable, so that no program can change every gate's policy
// behind its back.
const (
	defaultMaxAttempts = 3
	defaultBackoff     = 200 * time.Millisecond
)

// withDefaults fills the zero fields with the defaults.
func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts == 0 {
		p.MaxAttempts = defaultMaxAttempts
	}
	if p.Backoff == 0 {
		p.Backoff = defaultBackoff
	}
	return p
}

// retryableError marks an effect error that retrying may fix.
type retryableError struct{ err error }

// Error returns the wrapped error's message.
func (e retryableError) Error() string { return e.err.Error() }

// Unwrap returns the wrapped error.
func (e retryableError) Unwrap() error { return e.err }

// Retryable marks err as one that retrying the effect may fix (a timeout,
// a 503, a rate limit). Errors not marked fail the call at once. Retryable
// of nil is nil.
func Retryable(err error) error {
	if err == nil {
		return nil
	}
	return retryableError{err}
}

// isRetryable reports whether err, or an error it wraps, was marked with
// [Retryable].
func isRetryable(err error) bool {
	var r retryableError
	return errors.As(err, &r)
}

// action returns the kernel action type a call of the tool becomes: its
// name, so that a record's kind names the tool that wrote it.
func (t *Tool) action() string { return t.Name }

// resultKind returns the percept kind of the tool's results.
func (t *Tool) resultKind() string {
	if t.Result != "" {
		return t.Result
	}
	return t.Name + "_result"
}

// restsOnNothing reports whether the tool rests on no belief: its action
// type is a safe, repeatable one. It says nothing of the tool's effect
// (an email may rest on no belief): [Tool.ReadOnly] does.
func (t *Tool) restsOnNothing() bool { return len(t.Requires) == 0 }

// effectful reports whether a read_only trace refuses the tool: any tool
// that does not declare [Tool.ReadOnly].
func (t *Tool) effectful() bool {
	if !readOnlyDeclared() {
		return !t.restsOnNothing() // the old reading: no belief, no effect
	}
	return !t.ReadOnly
}
