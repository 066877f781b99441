package budget

import (
	"encoding/json"
	"maps"
	"math"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/ramp"
)

// Snapshot is a read-only copy of a run's budget at one moment: what each
// resource has used, its limit, what is left and the pressure on it. It
// shares no memory with the run; changing it changes nothing. Maps hold
// only the resources the run limits, except Used, which holds them all
// (tool_calls_per_turn: the current turn's calls; deadline: milliseconds
// since the run started).
type Snapshot struct {
	RunID   string    `json:"run_id"`
	TakenAt time.Time `json:"taken_at"`
	Soft    float64   `json:"soft"`
	// Turn and Round count the turns and rounds begun.
	Turn  int64 `json:"turn"`
	Round int64 `json:"round"`

	Used      map[Resource]float64 `json:"used"`
	Limits    map[Resource]float64 `json:"limits,omitempty"`
	Remaining map[Resource]float64 `json:"remaining,omitempty"`
	// Pressure is, per limited resource, 0 up to the soft threshold, then
	// rising linearly to 1 when the budget is spent.
	Pressure map[Resource]float64 `json:"pressure,omitempty"`
	// Budget is the budget pressure: the highest pressure here or in an
	// ancestor, in [0, 1].
	Budget float64 `json:"budget_pressure"`

	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	// HeldTokens are held by reservations not yet settled; they count as
	// used in Remaining and Pressure.
	HeldTokens int64 `json:"held_tokens,omitempty"`
	// Refused counts, per resource, the requests of this run it refused.
	Refused map[Resource]int64 `json:"refused,omitempty"`
	// Parent is the snapshot, taken at the same moment, of the run this
	// one draws on.
	Parent *Snapshot `json:"parent,omitempty"`
}

// Snapshot returns a copy of the run's budget and of its ancestors', all
// taken at one moment under the run's lock.
func (r *Run) Snapshot() Snapshot {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	return *r.snapshot(now)
}

func (r *Run) snapshot(now time.Time) *Snapshot {
	s := &Snapshot{
		RunID: r.id, TakenAt: now, Soft: r.limits.Soft, Turn: r.turn, Round: r.counts[iRounds],
		Used:         make(map[Resource]float64, len(Resources())),
		PromptTokens: r.prompt, CompletionTokens: r.completion, HeldTokens: r.held,
	}
	for res, i := range counterIndex {
		s.Used[res] = float64(r.counts[i])
	}
	s.Used[Cost] = r.cost
	s.Used[Deadline] = float64(now.Sub(r.start).Milliseconds())
	for _, res := range Resources() {
		limit, ok := r.limits.limit(res)
		if !ok {
			continue
		}
		if s.Limits == nil {
			s.Limits = make(map[Resource]float64, 8)
			s.Remaining = make(map[Resource]float64, 8)
			s.Pressure = make(map[Resource]float64, 8)
		}
		used := s.Used[res]
		if res == Tokens {
			used += float64(r.held)
		}
		s.Limits[res] = limit
		s.Remaining[res] = math.Max(0, limit-used)
		s.Pressure[res] = ramp.Of(used/limit, r.limits.Soft)
		s.Budget = math.Max(s.Budget, s.Pressure[res])
	}
	if len(r.refused) > 0 {
		s.Refused = maps.Clone(r.refused)
	}
	if r.parent != nil {
		s.Parent = r.parent.snapshot(now)
		s.Budget = math.Max(s.Budget, s.Parent.Budget)
	}
	return s
}

// Left returns what the run can still spend of res: the least remaining
// over the run and every ancestor that limits a resource the run draws on
// them for. ok is false when nothing limits res.
func (s Snapshot) Left(res Resource) (left float64, ok bool) {
	for x := &s; x != nil; x = x.Parent {
		if v, limited := x.Remaining[res]; limited && (!ok || v < left) {
			left, ok = v, true
		}
		if !drawsOnParent(res) && res != Deadline {
			break
		}
	}
	return left, ok
}

// Payload returns the snapshot as a JSON-compatible payload, for a
// decision record's Context (under "budget") or a worker's view.
func (s Snapshot) Payload() blackboard.Payload { return toPayload(s) }

// toPayload encodes v through JSON into a payload: numbers become float64,
// times RFC 3339 strings, as the kernel normalises payloads.
func toPayload(v any) blackboard.Payload {
	enc, err := json.Marshal(v)
	if err != nil {
		return blackboard.Payload{"error": err.Error()}
	}
	var p blackboard.Payload
	if err := json.Unmarshal(enc, &p); err != nil {
		return blackboard.Payload{"error": err.Error()}
	}
	return p
}
