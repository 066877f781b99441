package study

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/bench/perturb"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/store/memstore"
)

// The view the harness puts in a kernel agent's JSON line, read from the
// store's records, is what kernel.View shows, on every kernel agent's
// episodes and on a trace with a record whose time to live has run out.
// Every view is built in the maps of the one before, as a run reuses them,
// so a slot or kind left over from an earlier view would show.
func TestLedgerViewMatchesKernel(t *testing.T) {
	ctx := context.Background()
	vm := new(viewMaps)
	same := func(t *testing.T, st *memstore.Store, trace string) {
		t.Helper()
		l, err := readLedger(ctx, st, st, Namespace, trace)
		if err != nil {
			t.Fatal(err)
		}
		defer l.release()
		defer vm.reset()
		got := l.view(time.Now().UnixMilli(), vm)
		k, err := kernel.New(kernel.Config{Store: st, Namespace: Namespace})
		if err != nil {
			t.Fatal(err)
		}
		v, err := k.Proposer(blackboard.RolePlanner, "reader").View(ctx, trace, false)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, v.Committed) {
			t.Fatalf("%s:\n ledger %v\n kernel %v", trace, got, v.Committed)
		}
	}
	n := 0
	for _, rates := range []perturb.Rates{perturb.DefaultRates(), {Drop: 0.3, Stale: 0.4, Conflict: 0.4, LowConfidence: 0.4}} {
		cfg := DefaultConfig()
		cfg.Seeds = 30
		cfg.Rates = rates
		cfg.Agents = []string{AgentBK, AgentAdversarialBK}
		p, err := cfg.plan()
		if err != nil {
			t.Fatal(err)
		}
		for j := range p.jobs(&cfg) {
			st := memstore.New()
			ep := j.ep
			ep.Store, ep.World = st, newWorld(ep.Task)
			if _, err := j.agent.Run(ctx, ep); err != nil {
				t.Fatal(err)
			}
			same(t, st, ep.TraceID)
			n++
		}
	}
	t.Logf("%d episodes", n)

	st := memstore.New()
	past := time.Now().Add(-time.Hour)
	k, err := kernel.New(kernel.Config{Store: st, Namespace: Namespace, Clock: func() time.Time { return past }})
	if err != nil {
		t.Fatal(err)
	}
	for _, ttl := range []time.Duration{0, time.Millisecond, 2 * time.Hour} {
		if _, err := k.Handle(blackboard.RoleTool, "tool").Write(ctx, kernel.Entry{TraceID: "ttl", Slot: blackboard.Percepts, Kind: "reading" + ttl.String(), TTL: ttl,
			Payload: blackboard.Payload{"value": 1.0}}); err != nil {
			t.Fatal(err)
		}
	}
	same(t, st, "ttl")
}
