package invariant

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/snapshot"
)

// hashPolicy is one recorded policy snapshot, by its hash: what a
// decision record's context names.
type hashPolicy struct {
	actions map[string]*snapshot.Tool // by action type
	// undeclared is an effectful tool that declares neither Scope nor
	// Unscoped, "" when there is none.
	undeclared string
	judged     bool // undeclared was reported
}

// notePolicy indexes the policy p of hash h for [scopeHeld].
func (c *checker) notePolicy(h string, p *snapshot.Policy) {
	if c.byHash[h] != nil {
		return
	}
	hp := &hashPolicy{actions: map[string]*snapshot.Tool{}}
	for i := range p.Tools {
		tp := &p.Tools[i]
		hp.actions[tp.Action] = tp
		if !tp.ReadOnly && len(tp.Scope) == 0 && !tp.Unscoped && hp.undeclared == "" {
			hp.undeclared = tp.Name
		}
	}
	c.byHash[h] = hp
}

// request is a trace's request record as the gate writes it.
type request struct {
	rec       *blackboard.Record
	at        int
	principal string
	resources map[string][]string
	bad       string // why the record is no request of the gate's, "" when it is
}

// requestKey is the once-key the request record of a trace claims (as
// [toolgate.Gate.RecordRequest] writes it).
func requestKey(traceID string) string {
	sum := sha256.Sum256([]byte(traceID))
	return "toolgate/request/" + hex.EncodeToString(sum[:])
}

// requests reads the kernel-role request records of t, and checks the
// first one holds the trace's request once-key.
func (c *checker) requests(t *trace) ([]request, error) {
	var out []request
	for i := range t.recs {
		r := &t.recs[i]
		if r.Slot != blackboard.Evidence || r.Kind != audit.KindRequest || r.Provenance.Role != blackboard.RoleKernel {
			continue
		}
		q := request{rec: r, at: i}
		q.principal, _ = r.Payload["principal"].(string)
		if q.principal == "" {
			q.bad = "it names no principal"
		}
		res, ok := r.Payload["resources"].(map[string]any)
		if !ok && r.Payload["resources"] != nil {
			q.bad = "its resources are not an object"
		}
		q.resources = map[string][]string{}
		for typ, v := range res {
			l, ok := v.([]any)
			if !ok {
				q.bad = "its resources of type " + typ + " are not a list"
				continue
			}
			for _, x := range l {
				s, ok := x.(string)
				if !ok {
					q.bad = "its resources of type " + typ + " are not strings"
					continue
				}
				q.resources[typ] = append(q.resources[typ], s)
			}
		}
		out = append(out, q)
	}
	if len(out) == 0 {
		return nil, nil
	}
	id, err := c.st.ClaimedBy(c.ctx, cmp.Or(out[0].rec.Namespace, blackboard.DefaultNamespace), requestKey(t.id))
	switch {
	case errors.Is(err, blackboard.ErrNotFound):
		id = ""
	case err != nil:
		return nil, err
	}
	if id != out[0].rec.ID && out[0].bad == "" {
		out[0].bad = "it does not hold the trace's request once-key"
		if id != "" {
			out[0].bad += " (" + id + " does)"
		}
	}
	return out, nil
}

// scope checks every action an effect recorded as run in t was for (see
// [scopeHeld]): the policy its decision names declares of each effectful
// tool whether it is scoped; the action of a scoped tool, and of any call
// whose decision names a request, was decided under the trace's one
// request, recorded before it, and a scoped tool's arguments lie within
// that request.
func (c *checker) scope(t *trace) error {
	if mutScopeHeld {
		return nil
	}
	return c.scopeHeld(t)
}

// scopeHeld is scope's check: the mutation switch mutScopeHeld skips
// it.
func (c *checker) scopeHeld(t *trace) error {
	var (
		reqs    []request
		readReq bool
		seen    = map[string]bool{}
	)
	for i := range t.recs {
		e, ok := audit.EffectOf(t.recs[i])
		if !ok || !ran(e) || seen[e.ActionID] {
			continue
		}
		seen[e.ActionID] = true
		at, ok := t.pos[e.ActionID]
		dec, decided := t.decided[e.ActionID]
		if !ok || !decided || !isCommittedAction(&t.recs[at]) {
			continue // effectAction reports it
		}
		act := &t.recs[at]
		bad := func(format string, args ...any) {
			c.report(scopeHeld, t.id, act.ID, "action "+act.ID+" ("+act.Kind+"): "+fmt.Sprintf(format, args...))
		}
		h, _ := dec.Context["policy"].(string)
		hp := c.byHash[h]
		if hp == nil {
			bad("its decision %s names policy %q, which no recorded policy snapshot is", dec.RecordID, h)
			continue
		}
		if hp.undeclared != "" && !hp.judged {
			hp.judged = true
			bad("its policy %s has effectful tool %q, which declares neither scope nor unscoped", h, hp.undeclared)
		}
		tp := hp.actions[act.Kind]
		if tp == nil {
			bad("its policy %s has no tool of action type %q", h, act.Kind)
			continue
		}
		reqID, named := dec.Context["request"].(string)
		principal, hasPrincipal := dec.Context["principal"]
		if len(tp.Scope) == 0 && !named && !hasPrincipal {
			continue
		}
		if !readReq {
			readReq = true
			var err error
			if reqs, err = c.requests(t); err != nil {
				return err
			}
		}
		q, why := heldRequest(reqs, reqID, at, &dec)
		if why != "" {
			bad("%s", why)
			continue
		}
		if hasPrincipal && principal != q.principal {
			bad("its decision names principal %v, the request's is %q", principal, q.principal)
		}
		for _, arg := range slices.Sorted(maps.Keys(tp.Scope)) {
			typ := tp.Scope[arg]
			s, isString := act.Payload[arg].(string)
			within := isString && s == q.principal
			if typ != snapshot.ScopePrincipal {
				within = isString && slices.Contains(q.resources[typ], s)
			}
			if !within {
				bad("argument %s = %v (%s) lies outside request %s", arg, act.Payload[arg], typ, q.rec.ID)
			}
		}
	}
	return nil
}

// heldRequest returns the request a decision dec about the action at
// index at of its trace was made under: the trace's one request record,
// the one its context names, appended before the action, holding the
// request once-key. why says what is wrong when it is not so.
func heldRequest(reqs []request, id string, at int, dec *audit.Entry) (request, string) {
	switch {
	case len(reqs) == 0:
		return request{}, "the trace has no request record, and its tool acts only within one"
	case len(reqs) > 1:
		return request{}, fmt.Sprintf("the trace has %d request records (%s and %s), not one", len(reqs), reqs[0].rec.ID, reqs[1].rec.ID)
	case id != reqs[0].rec.ID:
		return request{}, fmt.Sprintf("its decision %s names request %q, the trace's is %s", dec.RecordID, id, reqs[0].rec.ID)
	case reqs[0].at > at:
		return request{}, "the request " + id + " was appended after it"
	case reqs[0].bad != "":
		return request{}, "the request " + id + " is no request the gate wrote: " + reqs[0].bad
	}
	return reqs[0], ""
}
