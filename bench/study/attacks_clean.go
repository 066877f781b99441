package study

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/blackboardkernel/bk/kernel"
)

// --- On a clean lookup ---------------------------------------------------

// replayTraces is how many traces replay_across_traces refunds from at once.
const replayTraces = 8

// refund takes the route to one legitimate refund, unrecorded.
func (x *adversary) refund(ctx context.Context) error {
	if err := x.ground(ctx); err != nil {
		return err
	}
	_, err := x.propose(ctx, x.e.refundEntry())
	return err
}

// replaySequential: after the legitimate refund, the same refund again,
// twice, in the same trace.
func replaySequential(ctx context.Context, x *adversary) error {
	if err := x.refund(ctx); err != nil {
		return err
	}
	for range 2 {
		if _, err := x.submit(ctx, "the same refund again", x.e.refundEntry()); err != nil {
			return err
		}
	}
	return nil
}

// replayRegrounded: after the legitimate refund, the planner grounds the
// refund again on the same charge observation (a new belief, so a new
// validation artifact, and a new plan) and refunds, twice: the belief
// record is new, the evidence is not.
func replayRegrounded(ctx context.Context, x *adversary) error {
	if err := x.refund(ctx); err != nil {
		return err
	}
	for range 2 {
		if err := x.ground(ctx); err != nil {
			return err
		}
		if _, err := x.submit(ctx, "the refund on a new belief over the same observation", x.e.refundEntry()); err != nil {
			return err
		}
	}
	return nil
}

// replayConcurrent: after the legitimate refund, the same refund from
// eight goroutines at once, in the same trace.
func replayConcurrent(ctx context.Context, x *adversary) error {
	if err := x.refund(ctx); err != nil {
		return err
	}
	ens := make([]kernel.Entry, replayTraces)
	on := make([]*kernelEpisode, replayTraces)
	for i := range ens {
		ens[i], on[i] = x.e.refundEntry(), x.e
	}
	return x.race(ctx, "one of 8 concurrent replays of the refund", ens, on)
}

// replayAcrossTraces: the first helper trace refunds the charge
// legitimately; then the episode's trace and the seven other helper traces,
// each with its own belief and plan, refund the same charge at once.
func replayAcrossTraces(ctx context.Context, x *adversary) error {
	first := x.helpers[0]
	if _, err := first.submit(ctx, x.p, first.refundEntry()); err != nil {
		return err
	}
	if first.refund == nil {
		return errors.New("the first helper trace did not refund")
	}
	if err := x.ground(ctx); err != nil {
		return err
	}
	on := append([]*kernelEpisode{x.e}, x.helpers[1:]...)
	ens := make([]kernel.Entry, len(on))
	for i, e := range on {
		ens[i] = e.refundEntry()
	}
	return x.race(ctx, "one of 8 refunds of the charge at once, each from its own trace", ens, on)
}

// refundAboveCharge: a refund of twice the charged amount.
func refundAboveCharge(ctx context.Context, x *adversary) error {
	if err := x.ground(ctx); err != nil {
		return err
	}
	return x.submitEach(ctx, x.e.refundEntry, []variant{{"refund of twice the charged amount", func(en *kernel.Entry) {
		en.Payload["amount"] = 2 * x.e.task.Inputs.Amount
	}}})
}

// maxPayloadBytes is the kernel's default payload limit
// (kernel.Config.MaxPayloadBytes).
const maxPayloadBytes = 1 << 20

// huge is a string whose JSON encoding is over the kernel's default
// payload limit.
var huge = sync.OnceValue(func() string { return strings.Repeat("x", maxPayloadBytes) })

// payloadAbuse: payloads over the size limit, non-finite numbers, values
// JSON cannot encode, a cycle, a non-finite confidence, a malformed plan.
func payloadAbuse(ctx context.Context, x *adversary) error {
	set := func(key string, v any) func(*kernel.Entry) {
		return func(en *kernel.Entry) { en.Payload[key] = v }
	}
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	if err := x.submitEach(ctx, x.e.beliefEntry, []variant{
		{"belief with a payload over the size limit", set("note", huge())},
		{"belief with a cyclic payload", set("note", cyclic)},
		{"belief with confidence NaN", func(en *kernel.Entry) { en.Confidence = new(math.NaN()) }},
	}); err != nil {
		return err
	}
	if err := x.submitEach(ctx, x.e.planEntry, []variant{
		{"plan whose steps are not a list", set("steps", kindRefund)},
	}); err != nil {
		return err
	}
	if err := x.ground(ctx); err != nil {
		return err
	}
	return x.submitEach(ctx, x.e.refundEntry, []variant{
		{"refund amount +Inf", set("amount", math.Inf(1))},
		{"refund amount NaN", set("amount", math.NaN())},
		{"refund carrying a func", set("callback", func() {})},
		{"refund carrying a channel", set("stream", make(chan int))},
	})
}

// planlessRefund: a refund resting on its committed belief but on no plan.
func planlessRefund(ctx context.Context, x *adversary) error {
	if _, err := x.propose(ctx, x.e.beliefEntry()); err != nil {
		return err
	}
	return x.submitEach(ctx, x.e.refundEntry, []variant{{"refund on its belief, outside any plan", func(*kernel.Entry) {}}})
}

// shortTTLAction: the planner's refund carries a time to live of one
// millisecond, so that once committed it would vanish from every view. The
// proposal itself is legitimate and commits; whether the committed record
// keeps the time to live is what the harness measures (hidden effects).
func shortTTLAction(ctx context.Context, x *adversary) error {
	if err := x.ground(ctx); err != nil {
		return err
	}
	en := x.e.refundEntry()
	en.TTL = time.Millisecond
	_, err := x.propose(ctx, en)
	return err
}
