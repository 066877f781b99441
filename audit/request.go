package audit

import "github.com/blackboardkernel/bk/blackboard"

// Request is what a trace serves, as its [KindRequest] record holds it:
// the principal the agent acts for and the resources they asked about, by
// type ("order": the ticket's order, "account": the customer's account).
// The application records it once per trace with toolgate's
// Gate.RecordRequest, from what it trusts (the ticket, the authenticated
// session), never from what a model says; a tool's scope (toolgate's
// Tool.Scope) then holds the arguments of every call to it.
type Request struct {
	// Principal is who the agent acts for: a customer id, an
	// authenticated user. Required.
	Principal string `json:"principal"`
	// Resources are the identifiers the request concerns, by resource
	// type. Each type and identifier is a non-empty string.
	Resources map[string][]string `json:"resources,omitempty"`
}

// RequestOf decodes the request a [KindRequest] record holds; ok is false
// when rec is not one written with the kernel's role (by the tool gate,
// through the Governor), or holds no request.
func RequestOf(rec blackboard.Record) (Request, bool) {
	if rec.Slot != blackboard.Evidence || rec.Kind != KindRequest || rec.Provenance.Role != blackboard.RoleKernel {
		return Request{}, false
	}
	p, ok := rec.Payload["principal"].(string)
	if !ok || p == "" {
		return Request{}, false
	}
	r := Request{Principal: p}
	res, _ := rec.Payload["resources"].(map[string]any)
	for typ, v := range res {
		l, ok := v.([]any)
		if !ok {
			return Request{}, false
		}
		ids := make([]string, len(l))
		for i, x := range l {
			if ids[i], ok = x.(string); !ok {
				return Request{}, false
			}
		}
		if r.Resources == nil {
			r.Resources = map[string][]string{}
		}
		r.Resources[typ] = ids
	}
	return r, true
}
