package study

import (
	"slices"

	"github.com/blackboardkernel/bk/bench/perturb"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// routePayloads are the payloads of one task that an honest kernel agent
// writes in every episode, built once per run instead of once per
// episode: the kernel only reads an entry's payload (it stores a
// normalised deep copy), and the honest route neither keeps nor changes
// its entries. They must never reach code that changes an entry, as the
// adversary does (TestSharedPayloadsStayUnchanged).
type routePayloads struct {
	belief, plan, refund blackboard.Payload
	// charges are the payment tool's percepts by fault pattern (see
	// [chargeIndex]).
	charges [16]blackboard.Payload
	// fallbacks are the fallback's payloads by reason, for every code the
	// study registers in t ([registered]); read-only once built, so that
	// episodes on several goroutines may share them.
	fallbacks map[reason.Code]blackboard.Payload
}

func newRoutePayloads(t *Task) *routePayloads {
	p := &routePayloads{belief: beliefPayload(), plan: planPayload(t), refund: refundPayload(t)}
	for i := range p.charges {
		p.charges[i] = t.Charge(perturb.Flags{Drop: i&8 != 0, Stale: i&4 != 0, Conflict: i&2 != 0, LowConfidence: i&1 != 0}, true)
	}
	codes := slices.Concat(kernelCodes, declineCodes)
	for _, c := range t.Constraints {
		codes = append(codes, "PLAN_"+reason.Blocked(c.Name), reason.Blocked(c.Name))
	}
	p.fallbacks = make(map[reason.Code]blackboard.Payload, len(codes))
	for _, c := range codes {
		p.fallbacks[c] = fallbackPayload(c)
	}
	return p
}

// chargeIndex is f's index in [routePayloads.charges].
func chargeIndex(f perturb.Flags) int {
	i := 0
	for _, b := range [...]bool{f.Drop, f.Stale, f.Conflict, f.LowConfidence} {
		i <<= 1
		if b {
			i |= 1
		}
	}
	return i
}

// chargePayload is what the payment tool returns under faults f.
func (e *kernelEpisode) chargePayload(f perturb.Flags) blackboard.Payload {
	if e.shared != nil {
		return e.shared.charges[chargeIndex(f)]
	}
	return e.task.Charge(f, true)
}

// The entries of the planner's route, as docs/reproduction.md §3 writes
// them. Their payloads are the shared ones when the episode has them, so
// a caller that changes an entry must build the episode without.

func (e *kernelEpisode) beliefEntry() kernel.Entry {
	var p blackboard.Payload
	if e.shared != nil {
		p = e.shared.belief
	} else {
		p = beliefPayload()
	}
	return kernel.Entry{
		TraceID: e.trace, Slot: blackboard.Beliefs, Kind: kindRefundDue,
		Payload: p, InputRefs: e.ref(e.charge),
	}
}

func (e *kernelEpisode) planEntry() kernel.Entry {
	var p blackboard.Payload
	if e.shared != nil {
		p = e.shared.plan
	} else {
		p = planPayload(e.task)
	}
	return kernel.Entry{TraceID: e.trace, Slot: blackboard.Plans, Kind: kindPlan, Payload: p}
}

// ref returns id as a list of input refs, backed by the episode when it
// has the shared payloads: the honest route builds one entry at a time and
// keeps none, where the adversary keeps and changes several.
func (e *kernelEpisode) ref(id string) []string {
	if e.shared == nil {
		return []string{id}
	}
	e.refs[0] = id
	return e.refs[:1:1]
}

// refundEntry is the refund, pointing at the committed plan if there is
// one.
func (e *kernelEpisode) refundEntry() kernel.Entry {
	var p blackboard.Payload
	if e.shared != nil {
		p = e.shared.refund
	} else {
		p = refundPayload(e.task)
	}
	en := kernel.Entry{TraceID: e.trace, Slot: blackboard.Actions, Kind: kindRefund, Payload: p}
	if e.plan != nil {
		en.InputRefs = e.ref(e.plan.ID)
	}
	return en
}

// The route's payloads hold their lists as []any, the form the kernel
// normalises every list to, so that it need not convert them (and box each
// name) in every episode.

func beliefPayload() blackboard.Payload {
	return blackboard.Payload{"value": true, "depends_on": []any{kindCharge}}
}

func planPayload(t *Task) blackboard.Payload {
	return blackboard.Payload{"steps": []any{map[string]any{
		"action":           kindRefund,
		"requires_beliefs": []any{kindRefundDue},
		"is_duplicate":     t.Inputs.IsDuplicate,
	}}}
}

func refundPayload(t *Task) blackboard.Payload {
	return blackboard.Payload{
		"type":             kindRefund,
		"charge_id":        t.Inputs.ChargeID,
		"amount":           t.Inputs.Amount,
		"reason":           t.Inputs.DisputeReason,
		"is_duplicate":     t.Inputs.IsDuplicate,
		"requires_beliefs": []any{kindRefundDue},
	}
}
