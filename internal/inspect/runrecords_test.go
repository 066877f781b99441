package inspect_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/internal/inspect"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/toolgate"
)

// The records a gate keeps about a run (its policy snapshot, a trace's run
// controls) are shown on the timeline for what they are and counted as no
// decision: a trace made read-only before anything happened in it has
// decided nothing, and the policy's own trace neither.
func TestTimelineRunRecords(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	var refunds atomic.Int32
	g := deskApp(t, s, &refunds)
	if err := g.Restrict(ctx, "quiet", toolgate.Controls{ReadOnly: true}); err != nil {
		t.Fatal(err)
	}
	for trace, want := range map[string]string{"quiet": "run controls: read_only", audit.PolicyTrace("desk"): "policy snapshot recorded"} {
		tl, err := inspect.Timeline(ctx, s, "", trace)
		if err != nil {
			t.Fatal(err)
		}
		if tl.Decisions != 0 {
			t.Errorf("%s: %d decisions, want 0", trace, tl.Decisions)
		}
		found := false
		for _, e := range tl.Events {
			found = found || strings.Contains(e.Text, want)
		}
		if !found {
			t.Errorf("%s: no event %q in %+v", trace, want, tl.Events)
		}
	}
}
