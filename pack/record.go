package pack

import (
	"context"
	"encoding/json"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
)

// Kind is the kind of the evidence record a compiled context is recorded
// as.
const Kind = "compiled_context"

// Record writes the compiled context as an evidence record of kind [Kind]
// in the run's trace, with the kernel's role, through g (the gate's
// governance capability: no handle can forge one), and returns its id.
// Its payload is the pack's JSON; its input refs are the records it shows
// (evidence and memory). It fails with [ErrInvalid] for a pack that did
// not come from [Compiler.Compile], and with g's errors.
func (p *Pack) Record(ctx context.Context, g *kernel.Governor) (string, error) {
	if p == nil || p.traceID == "" || p.Hash == "" {
		return "", newErr("record", "", ErrInvalid, "not a compiled pack")
	}
	if g == nil {
		return "", newErr("record", "", ErrInvalid, "nil governor")
	}
	enc, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	var payload map[string]any
	if err := json.Unmarshal(enc, &payload); err != nil {
		return "", err
	}
	rec, err := g.Append(ctx, kernel.Follow{Role: blackboard.RoleKernel, Entry: kernel.Entry{
		TraceID: p.traceID, Slot: blackboard.Evidence, Kind: Kind, Payload: payload,
		InputRefs: dedupe(p.refs),
	}})
	if err != nil {
		return "", err
	}
	return rec.ID, nil
}

func dedupe(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
