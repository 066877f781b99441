package study

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/blackboardkernel/bk/bench/perturb"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// adversary is the hostile planner of one episode.
type adversary struct {
	a     *kernelAgent
	k     *kernel.Kernel
	p     *kernel.Proposer
	e     *kernelEpisode
	w     world
	store store.Store
	// helpers are clean traces of the same charge in the same store, and
	// helperPending a proposal left pending in the first.
	helpers       []*kernelEpisode
	helperPending string
	report        *Attack
}

// mount has the adversary mount the episode's attack.
func (a *kernelAgent) mount(ctx context.Context, k *kernel.Kernel, p *kernel.Proposer, e *kernelEpisode, ep Episode, w world, store store.Store) (*Attack, error) {
	atk, _ := a.pick(ep.Task, ep.Seed)
	x := &adversary{a: a, k: k, p: p, e: e, w: w, store: store, report: &Attack{Name: atk.name, Target: atk.target, Attempts: []Attempt{}}}
	for i := range atk.helpers {
		if err := x.addHelper(ctx, ep, i); err != nil {
			return nil, err
		}
	}
	if err := atk.mount(ctx, x); err != nil {
		return nil, err
	}
	x.report.Blocked = x.report.blocked()
	return x.report, nil
}

// addHelper sets up clean helper trace i (the episode's charge, fresh and
// not a duplicate) and has the planner commit its belief and plan there;
// the first also keeps one proposal pending.
func (x *adversary) addHelper(ctx context.Context, ep Episode, i int) error {
	clean := *ep.Task
	clean.Inputs.IsDuplicate = false
	w := x.w
	w.faults, w.late, w.ledger = perturb.Flags{}, false, ledgerOK
	h, err := x.a.setup(ctx, x.k, &clean, helperTrace(ep.TraceID, i), w, nil)
	if err != nil {
		return err
	}
	for _, en := range []kernel.Entry{h.beliefEntry(), h.planEntry()} {
		if _, err := h.submit(ctx, x.p, en); err != nil {
			return err
		}
	}
	if h.belief == nil || h.plan == nil {
		return errors.New("a clean helper trace did not commit its belief and plan")
	}
	if i == 0 {
		pending, err := x.p.Write(ctx, h.beliefEntry())
		if err != nil {
			return err
		}
		x.helperPending = pending
	}
	x.helpers = append(x.helpers, h)
	return nil
}

// decided is [kernelEpisode.decided] for a decision about a proposal
// named by id: the kind is the committed record's, read from the store.
func (x *adversary) decided(ctx context.Context, d kernel.Decision) error {
	var kind string
	if d.Committed() {
		r, err := x.k.Reader().Get(ctx, d.CommittedID)
		if err != nil {
			return err
		}
		kind = r.Kind
	}
	return x.e.decided(ctx, d, kind)
}

// evidenceOf returns the evidence refs of the record with that id (a
// committed belief's: its evidence artifact), read from the store: the
// kernel hands back ids.
func (x *adversary) evidenceOf(ctx context.Context, id string) ([]string, error) {
	r, err := x.k.Reader().Get(ctx, id)
	return r.EvidenceRefs, err
}

// submit proposes a hostile entry and has the kernel decide it.
func (x *adversary) submit(ctx context.Context, step string, en kernel.Entry) (kernel.Decision, error) {
	d, err := x.p.Submit(ctx, en)
	if err == nil {
		err = x.e.decided(ctx, d, en.Kind)
	}
	return d, x.record(ctx, step, d.Committed(), d.Code, err)
}

// commit asks the kernel to decide proposal id of the episode's trace.
func (x *adversary) commit(ctx context.Context, step, id string) error {
	d, err := x.p.Commit(ctx, x.e.trace, id)
	if err == nil {
		err = x.decided(ctx, d)
	}
	return x.record(ctx, step, d.Committed(), d.Code, err)
}

// write stores a hostile entry without having it decided.
func (x *adversary) write(ctx context.Context, step string, en kernel.Entry) error {
	_, err := x.p.Write(ctx, en)
	return x.record(ctx, step, err == nil, "", err)
}

// record notes the kernel's answer to a hostile attempt. Only a context
// that ended is an error: a refusal is what the attack is measured by.
func (x *adversary) record(ctx context.Context, step string, accepted bool, code reason.Code, err error) error {
	x.report.Attempts = append(x.report.Attempts, attempt(step, accepted, code, err))
	return ctx.Err()
}

// attempt is the record of one hostile attempt.
func attempt(step string, accepted bool, code reason.Code, err error) Attempt {
	if err != nil {
		accepted, code = false, kernel.CodeOf(err)
	}
	if accepted {
		code = ""
	}
	return Attempt{Step: step, Code: code, Accepted: accepted}
}

// race submits n hostile entries at once, each from its own goroutine, and
// records the answers in a fixed order (committed first, then by code), so
// that the attack's record does not depend on who won.
func (x *adversary) race(ctx context.Context, step string, ens []kernel.Entry, on []*kernelEpisode) error {
	out := make([]Attempt, len(ens))
	ds := make([]kernel.Decision, len(ens))
	var wg sync.WaitGroup
	for i := range ens {
		wg.Go(func() {
			d, err := x.p.Submit(ctx, ens[i])
			ds[i] = d
			out[i] = attempt(step, d.Committed(), d.Code, err)
		})
	}
	wg.Wait()
	for i, d := range ds {
		on[i].note(d, ens[i].Kind)
	}
	slices.SortStableFunc(out, func(a, b Attempt) int {
		if a.Accepted != b.Accepted {
			if a.Accepted {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Code, b.Code)
	})
	x.report.Attempts = append(x.report.Attempts, out...)
	return ctx.Err()
}

// propose submits an honest entry, unrecorded.
func (x *adversary) propose(ctx context.Context, en kernel.Entry) (kernel.Decision, error) {
	return x.e.submit(ctx, x.p, en)
}

// ground proposes the belief and the plan of the route, unrecorded.
func (x *adversary) ground(ctx context.Context) error {
	for _, en := range []kernel.Entry{x.e.beliefEntry(), x.e.planEntry()} {
		if _, err := x.propose(ctx, en); err != nil {
			return err
		}
	}
	return nil
}

// variant is one hostile change to an entry.
type variant struct {
	step   string
	change func(en *kernel.Entry)
}

// submitEach submits one hostile variant of base() per change.
func (x *adversary) submitEach(ctx context.Context, base func() kernel.Entry, vs []variant) error {
	for _, v := range vs {
		en := base()
		v.change(&en)
		if _, err := x.submit(ctx, v.step, en); err != nil {
			return err
		}
	}
	return nil
}

// planAndRefund submits a plan and a refund changed by change as hostile
// attempts, each with its step.
func (x *adversary) planAndRefund(ctx context.Context, planStep, refundStep string, change func(m map[string]any)) error {
	if err := x.submitEach(ctx, x.e.planEntry, []variant{{planStep, func(en *kernel.Entry) { change(step(en)) }}}); err != nil {
		return err
	}
	return x.submitEach(ctx, x.e.refundEntry, []variant{{refundStep, func(en *kernel.Entry) { change(en.Payload) }}})
}

// step returns the first step of a plan entry, to change it.
func step(en *kernel.Entry) map[string]any {
	return en.Payload["steps"].([]any)[0].(map[string]any)
}

// keep leaves an entry as it is.
func keep(map[string]any) {}
