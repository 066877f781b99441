package toolgate_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/toolgate"
)

// Names a model (or a careless owner) could give that are not names:
// terminal escape sequences (erase the line, write the clipboard), a
// bidirectional override, spaces, a name too long.
var notNames = []string{
	"\x1b[2K\x1b[1Alookup",
	"lookup\x1b]52;c;cm0gLXJmIH4=\x07",
	"look\u202eup",
	"look up",
	strings.Repeat("a", 65),
	"",
}

// TestAttackToolNameNotAName: a tool whose name is not a name is refused
// at registration; a call naming one is TOOL_UNKNOWN, and no record the
// gate stores holds the name's control characters.
func TestAttackToolNameNotAName(t *testing.T) {
	effect := func(context.Context, toolgate.Invocation) (blackboard.Payload, error) {
		return blackboard.Payload{}, nil
	}
	for _, name := range notNames {
		tool := toolgate.Tool{Unscoped: true, Name: name, Effect: effect}
		if _, err := toolgate.New(context.Background(), toolgate.Config{Tools: []toolgate.Tool{tool}}); !errors.Is(err, blackboard.ErrInvalidInput) {
			t.Errorf("New with tool %q: %v, want a config error (blackboard.ErrInvalidInput)", name, err)
		}
	}
	for _, ok := range []string{"lookup_order", "v2.search-kb", strings.Repeat("a", 64)} {
		g, err := toolgate.New(context.Background(), toolgate.Config{Tools: []toolgate.Tool{{Unscoped: true, Name: ok, Effect: effect}}})
		if err != nil {
			t.Errorf("New with tool %q: %v", ok, err)
			continue
		}
		g.Close()
	}

	st := memstore.New()
	lookup := toolgate.Tool{Unscoped: true, Name: "lookup", Effect: effect}
	g, err := toolgate.New(context.Background(), toolgate.Config{
		Kernel:    kernel.Config{Store: st},
		Tools:     []toolgate.Tool{lookup},
		Contracts: map[string][]string{"agent": {"lookup"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for _, name := range notNames[:4] {
		res, err := g.Call(context.Background(), toolgate.Call{Tool: name, Caller: "agent", TraceID: "t-names", Args: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != audit.OutcomeRefused || res.Code != reason.ToolUnknown {
			t.Errorf("call of %q: %s %s, want refused TOOL_UNKNOWN", name, res.Outcome, res.Code)
		}
		if strings.ContainsAny(res.Hint+res.RootCause.Detail, "\x1b\x07\u202e") {
			t.Errorf("call of %q: the answer echoes the name: %+v", name, res)
		}
	}
	for _, slot := range blackboard.AllSlots() {
		for r, err := range st.ListSlot(context.Background(), slot, store.Filter{}) {
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			// JSON writes a control character in a string as \u00XX, and
			// keeps the override as it is.
			if s := string(b); strings.Contains(s, `\u001b`) || strings.Contains(s, `\u0007`) || strings.Contains(s, "\u202e") {
				t.Errorf("record %s holds a raw control character of a tool name: %s", r.ID, s)
			}
		}
	}
}
