package inspect_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/inspect"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store/memstore"
)

// TestJSON: both reports encode as the bk command's --json prints them,
// valid JSON whose stored text is inert, and a record or trace the store
// lacks is blackboard.ErrNotFound.
func TestJSON(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	fallback, err := stale(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	k, err := kernel.New(kernel.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Handle(blackboard.RoleTool, "payment_tool").Write(ctx, kernel.Entry{TraceID: "stale", Slot: blackboard.Percepts, Kind: "note",
		Payload: blackboard.Payload{"text": "a\u202e\u009bb"}}); err != nil {
		t.Fatal(err)
	}
	ex, err := inspect.Explain(ctx, s, fallback)
	if err != nil {
		t.Fatal(err)
	}
	tl, err := inspect.Timeline(ctx, s, "", "stale")
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]any{"explanation": ex, "timeline": tl} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil || m["trace_id"] != "stale" {
			t.Errorf("%s: %v %v\n%s", name, err, m["trace_id"], b)
		}
		if strings.ContainsAny(string(b), "\u202e\u009b") {
			t.Errorf("%s: a control character printed raw:\n%s", name, b)
		}
	}
	if ex.Verdict() != "fallback" || ex.Code() != reason.Committed || !strings.Contains(ex.String(), "root cause: STALE_EVIDENCE") {
		t.Errorf("explanation: %s %s\n%s", ex.Verdict(), ex.Code(), ex)
	}
	if tl.Fates() != "queue_for_review committed" || !strings.Contains(tl.String(), "percept.charge committed") {
		t.Errorf("timeline: %q\n%s", tl.Fates(), tl)
	}
	if _, err := inspect.Explain(ctx, s, "nothing"); !errors.Is(err, blackboard.ErrNotFound) {
		t.Errorf("Explain of no record: %v", err)
	}
	if _, err := inspect.Timeline(ctx, s, "", "nothing"); !errors.Is(err, blackboard.ErrNotFound) {
		t.Errorf("Timeline of no trace: %v", err)
	}
}
