package toolgate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/snapshot"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// Limits of a [audit.Request], so that its record stays small.
const (
	maxRequestName      = 256 // a principal, a type or an identifier, in bytes
	maxRequestResources = 256 // identifiers in all
)

// checkScope checks what a tool declares about its arguments' relation to
// the request: Scope or Unscoped, not both; an effectful tool declares
// one of them; each scoped argument is a declared, unmasked argument with
// a resource type.
func checkScope(t *Tool, s *schema) error {
	switch {
	case len(t.Scope) > 0 && t.Unscoped:
		return errors.New("both Scope and Unscoped")
	case len(t.Scope) == 0 && !t.Unscoped && !t.ReadOnly && scopeDeclared():
		return errors.New("an effectful tool (not ReadOnly) must declare Scope (which arguments must lie within the trace's request) or Unscoped")
	}
	for _, arg := range slices.Sorted(maps.Keys(t.Scope)) {
		typ := t.Scope[arg]
		switch {
		case arg == "" || typ == "":
			return fmt.Errorf("scope: empty argument or resource type (%q: %q)", arg, typ)
		case len(s.props) > 0 && !hasProp(s, arg):
			return fmt.Errorf("scope: argument %q is not a declared property", arg)
		case slices.Contains(t.Masked, arg):
			// The kernel decides on the hash; the request holds the value.
			return fmt.Errorf("scope: argument %q is masked", arg)
		}
	}
	return nil
}

// checkRequest refuses a request the gate would not record: no principal,
// an empty type or identifier, the reserved type, a name that is too long
// or holds a control character, too many identifiers. It returns the
// request as recorded: each type's identifiers sorted, once.
func checkRequest(r audit.Request) (audit.Request, error) {
	if err := checkLen(r.Principal, maxRequestName); err != nil {
		return audit.Request{}, fmt.Errorf("principal: %v", err)
	}
	out := audit.Request{Principal: r.Principal}
	n := 0
	for _, typ := range slices.Sorted(maps.Keys(r.Resources)) {
		if err := checkLen(typ, maxRequestName); err != nil {
			return audit.Request{}, fmt.Errorf("resource type %q: %v", typ, err)
		}
		if typ == snapshot.ScopePrincipal {
			return audit.Request{}, fmt.Errorf("resource type %q is the principal's: set Principal", typ)
		}
		ids := slices.Clone(r.Resources[typ])
		for _, id := range ids {
			if err := checkLen(id, maxRequestName); err != nil {
				return audit.Request{}, fmt.Errorf("resource %s %q: %v", typ, id, err)
			}
		}
		slices.Sort(ids)
		ids = slices.Compact(ids)
		if n += len(ids); n > maxRequestResources {
			return audit.Request{}, fmt.Errorf("more than %d resources", maxRequestResources)
		}
		if len(ids) > 0 {
			if out.Resources == nil {
				out.Resources = map[string][]string{}
			}
			out.Resources[typ] = ids
		}
	}
	return out, nil
}

func requestsEqual(r, o audit.Request) bool {
	return r.Principal == o.Principal && maps.EqualFunc(r.Resources, o.Resources, slices.Equal)
}

// requestPayload is the request as its record holds it.
func requestPayload(r audit.Request, policy string) blackboard.Payload {
	res := make(map[string]any, len(r.Resources))
	for typ, ids := range r.Resources {
		l := make([]any, len(ids))
		for i, id := range ids {
			l[i] = id
		}
		res[typ] = l
	}
	return blackboard.Payload{"principal": r.Principal, "resources": res, keyPolicy: policy}
}

// requestKey is the once-key the request record of a trace claims.
func requestKey(traceID string) string {
	sum := sha256.Sum256([]byte(traceID))
	return "toolgate/request/" + hex.EncodeToString(sum[:])
}

// recordRequest is [Gate.RecordRequest].
func (x *executor) recordRequest(ctx context.Context, traceID string, r audit.Request) error {
	if err := checkTrace(traceID); err != nil {
		return invalidCall("trace id: %v", err)
	}
	r, err := checkRequest(r)
	if err != nil {
		return invalidCall("request: %v", err)
	}
	for attempt := 0; attempt < 2; attempt++ {
		cur, _, ok, err := x.requestOf(ctx, traceID)
		if err != nil {
			return err
		}
		if ok {
			if requestsEqual(cur, r) && requestOnce() {
				return nil
			}
			if requestOnce() {
				return errorf(blackboard.ErrDuplicateKey, "the trace's request is recorded already, and is another: trace %q: %s", traceID, concerns(cur))
			}
		}
		keys := []string{requestKey(traceID)}
		if !requestOnce() {
			keys = nil
		}
		_, err = x.planner.gov.Append(ctx, kernel.Follow{Role: blackboard.RoleKernel, Entry: kernel.Entry{
			TraceID: traceID, Slot: blackboard.Evidence, Kind: audit.KindRequest, OnceKeys: keys, Payload: requestPayload(r, x.g.policyHash)}})
		if !errors.Is(err, blackboard.ErrDuplicateKey) {
			return err
		}
	}
	return fmt.Errorf("%w: request of trace %q: too much contention", blackboard.ErrConflict, traceID)
}

// requestOf returns the request recorded for the trace and its record's
// id; ok is false when there is none. A record that holds the trace's
// request key and is no request the gate wrote is an error: the store
// was written behind the gate's back.
func (x *executor) requestOf(ctx context.Context, traceID string) (audit.Request, string, bool, error) {
	var (
		rec blackboard.Record
		err error
	)
	if !requestOnce() {
		// Without the once-key, the latest request record of the trace.
		rec, err = x.reader.Find(ctx, traceID, blackboard.Evidence, audit.KindRequest)
	} else {
		var id string
		if id, err = x.gov.ClaimedBy(ctx, requestKey(traceID)); err == nil {
			rec, err = x.reader.Get(ctx, id)
		}
	}
	if errors.Is(err, blackboard.ErrNotFound) {
		return audit.Request{}, "", false, nil
	}
	if err != nil {
		return audit.Request{}, "", false, err
	}
	r, ok := audit.RequestOf(rec)
	if !ok || rec.Provenance.TraceID != traceID {
		return audit.Request{}, "", false, fmt.Errorf("%w: record %s holds the request key of trace %q and is no request of it", blackboard.ErrConflict, rec.ID, traceID)
	}
	return r, rec.ID, true, nil
}

// concerns says what the request concerns, for a refusal and its hint.
func concerns(r audit.Request) string {
	var parts []string
	for _, typ := range slices.Sorted(maps.Keys(r.Resources)) {
		q := make([]string, len(r.Resources[typ]))
		for i, id := range r.Resources[typ] {
			q[i] = quote(id)
		}
		parts = append(parts, typ+" "+strings.Join(q, ", "))
	}
	s := "the request of " + quote(r.Principal)
	if len(parts) == 0 {
		return s + " concerns no resource"
	}
	return s + " concerns " + strings.Join(parts, "; ")
}

// scopeFailure is why a call's arguments do not lie within its trace's
// request; "" when they do.
func (e *entry) scopeFailure(args blackboard.Payload, r audit.Request, ok bool) string {
	if !requestScoped() || len(e.Scope) == 0 {
		return ""
	}
	if !ok {
		return "no request is recorded for the trace, and " + quote(e.Name) + " acts only within one"
	}
	for _, arg := range slices.Sorted(maps.Keys(e.Scope)) {
		typ := e.Scope[arg]
		given, has := args[arg]
		if !has {
			return "the call has no argument " + quote(arg) + ", which must lie within the request (" + typ + "): " + concerns(r)
		}
		s, isString := given.(string)
		within := isString && s == r.Principal
		if typ != snapshot.ScopePrincipal {
			within = isString && slices.Contains(r.Resources[typ], s)
		}
		if !within {
			return fmt.Sprintf("argument %s = %s (%s) lies outside the request: %s", quote(arg), shown(given), typ, concerns(r))
		}
	}
	return ""
}

// scope checks a call against its trace's request before the kernel
// decides it: the call's principal, when it names one, must be the
// request's, and a scoped tool's arguments must lie within the request.
// A call that does not is refused with OUT_OF_SCOPE and stores only its
// decision record. It names the request record and its principal in the
// call's context cc.
func (x *executor) scope(ctx context.Context, c Call, e *entry, args blackboard.Payload, cc blackboard.Payload) (Result, bool, error) {
	if len(e.Scope) == 0 && c.Principal == "" {
		return Result{}, false, nil
	}
	r, id, ok, err := x.requestOf(ctx, c.TraceID)
	if err != nil {
		return Result{}, true, err
	}
	if ok {
		cc["request"] = id
		cc["principal"] = r.Principal
	}
	detail := ""
	switch {
	case c.Principal != "" && ok && c.Principal != r.Principal && principalChecked():
		detail = "the call is made for " + quote(clip(c.Principal)) + ", and the trace serves another principal: " + concerns(r)
	default:
		detail = e.scopeFailure(args, r, ok)
	}
	if detail == "" {
		return Result{}, false, nil
	}
	res, err := x.refuse(ctx, c.TraceID, e, e.Name, reason.OutOfScope, detail, cc)
	res.RootCause.Record = id
	return res, true, err
}

// scopeValidator checks a scoped tool's action against the trace's
// request as the kernel decides it: the request record of the trace state
// the decision reads. A request is recorded once per trace, so what the
// gate checked before the kernel is what the kernel finds; the validator
// holds every other way an action of the tool could come to be decided.
// A request record another role wrote (an evidence handle may write any
// kind) fails closed.
type scopeValidator struct{ g *Gate }

// Validate implements kernel.Validator.
func (v scopeValidator) Validate(_ context.Context, c kernel.Candidate) kernel.Cause {
	if c.Proposal().Slot != blackboard.Actions {
		return kernel.Cause{}
	}
	e := v.g.tools[c.Proposal().Kind]
	if e == nil || len(e.Scope) == 0 {
		return kernel.Cause{}
	}
	rec, ok := c.Committed(blackboard.Evidence, audit.KindRequest)
	var r audit.Request
	if ok {
		if r, ok = audit.RequestOf(rec); !ok {
			return kernel.Cause{Code: reason.OutOfScope, Rule: audit.KindRequest,
				Detail: "the trace's latest request record " + rec.ID + " was not written by the gate"}
		}
	}
	if d := e.scopeFailure(c.Proposal().Payload, r, ok); d != "" {
		return kernel.Cause{Code: reason.OutOfScope, Rule: audit.KindRequest, Detail: d}
	}
	return kernel.Cause{}
}
