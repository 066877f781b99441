package replay

import (
	"context"
	"slices"
	"sort"
	"sync"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
)

// report pairs the recorded decisions with the replay's.
func (r *replayer) report() Report {
	rep := Report{Namespace: r.ns, TraceID: r.trace, First: -1, Counts: map[Match]int{Same: 0, Changed: 0, Missing: 0, Extra: 0}}
	var replayed []item
	seenCall := map[int]bool{}
	for _, c := range r.store.taken() {
		d, ok := audit.Of(c.rec)
		if !ok || d.TraceID != r.trace {
			continue
		}
		if r.callSteps[c.step] && !seenCall[c.step] {
			seenCall[c.step] = true
			replayed = append(replayed, r.itemOf(d, stageCall, "", c.step))
			continue
		}
		stage, act := classify(d)
		src, known := r.back[act]
		if !known || src == "" {
			act = "" // no recorded counterpart: keyed by its step
		} else {
			act = src
		}
		replayed = append(replayed, r.itemOf(d, stage, act, c.step))
	}
	queue := map[string][]int{}
	for i, it := range replayed {
		queue[it.key] = append(queue[it.key], i)
	}
	used := make([]bool, len(replayed))
	type row struct {
		step, order int
		d           Comparison
	}
	var rows []row
	for n, it := range r.recorded {
		d := Comparison{Record: it.id, Kind: it.kind, Tool: it.tool, Stage: it.stage, Recorded: it.out.o, RecordedCode: it.out.code, Match: Missing}
		if q := queue[it.key]; len(q) > 0 {
			i := q[0]
			queue[it.key], used[i] = q[1:], true
			d.Replayed, d.Replay, d.ReplayCode = replayed[i].id, replayed[i].out.o, replayed[i].out.code
			d.Match = compare(it.out, replayed[i].out)
		}
		rows = append(rows, row{it.step, n, d})
	}
	for n, it := range r.proposed {
		d := Comparison{Record: it.id, Kind: it.kind, Stage: it.stage, Recorded: it.out.o, RecordedCode: it.out.code, Match: Missing}
		if it.pair != nil {
			d.Replayed, d.Replay, d.ReplayCode, d.Match = it.pair.id, it.pair.out.o, it.pair.out.code, compare(it.out, it.pair.out)
		}
		rows = append(rows, row{it.step, len(r.recorded) + n, d})
	}
	for i, it := range replayed {
		if !used[i] {
			rows = append(rows, row{it.step, len(r.recorded) + len(r.proposed) + i,
				Comparison{Replayed: it.id, Kind: it.kind, Tool: it.tool, Stage: it.stage, Replay: it.out.o, ReplayCode: it.out.code, Match: Extra}})
		}
	}
	sort.SliceStable(rows, func(a, b int) bool {
		if rows[a].step != rows[b].step {
			return rows[a].step < rows[b].step
		}
		return rows[a].order < rows[b].order
	})
	for _, rw := range rows {
		rep.Counts[rw.d.Match]++
		if rw.d.Match != Same && rep.First < 0 {
			rep.First = len(rep.Decisions)
		}
		rep.Decisions = append(rep.Decisions, rw.d)
	}
	for n := range r.notes {
		rep.Notes = append(rep.Notes, n)
	}
	slices.Sort(rep.Notes)
	return rep
}

func compare(a, b outcome) Match {
	if a == b {
		return Same
	}
	return Changed
}

// capture is the replay's store: a memory store that keeps the decision
// records appended to it, each with the step that wrote it.
type capture struct {
	*memstore.Store
	mu   sync.Mutex
	step int
	recs []captured
}

type captured struct {
	step int
	rec  blackboard.Record
}

// Apply applies b and keeps its decision records.
func (c *capture) Apply(ctx context.Context, b store.Batch) error {
	if err := c.Store.Apply(ctx, b); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rec := range b.Appends {
		if rec.Slot == blackboard.Evidence && rec.Kind == audit.Kind {
			c.recs = append(c.recs, captured{c.step, rec.Clone()})
		}
	}
	return nil
}

func (c *capture) taken() []captured {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.recs)
}
