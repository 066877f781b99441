package main

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/inspect"
	"github.com/blackboardkernel/bk/store/sqlitestore"
)

// TestExplainShowsTheCompiledContext: the desk runs on compiled contexts,
// one recorded per model call, and `bk explain` of any decision on a
// model's call (or on a belief derived from one's result) says what the
// model was shown: the compiled context, its verified hash, its tokens,
// tools, evidence and cuts. A decision the model did not take (the
// supervisor resuming an approved refund, the fallback of a denied one)
// shows what the model was shown when it asked for the action.
func TestExplainShowsTheCompiledContext(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "desk.db")
	runDesk(t, "--db", db, "--approver", "supervisor")
	checkDB(t, db)
	s, err := sqlitestore.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	contexts, decisions := 0, 0
	for _, tk := range tickets {
		for r, err := range s.ListTrace(ctx, "support_desk", tk.ID) {
			if err != nil {
				t.Fatal(err)
			}
			if r.Slot == blackboard.Evidence && r.Kind == audit.KindCompiledContext {
				contexts++
			}
			if _, ok := audit.Of(r); !ok {
				continue
			}
			decisions++
			ex, err := inspect.Explain(ctx, s, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			text := ex.String()
			if ex.Shown == nil || ex.Shown.Invalid != "" || !ex.Shown.Verified {
				t.Errorf("bk explain %s shows no verified compiled context:\n%s", r.ID, text)
				continue
			}
			c := ex.Shown.Context
			for _, want := range []string{"shown to the model: " + ex.Shown.Record, c.Hash + " (verified)", "of 16384 tokens", "tools: ", "evidence", "cuts: "} {
				if !strings.Contains(text, want) {
					t.Errorf("bk explain %s lacks %q:\n%s", r.ID, want, text)
				}
			}
			if c.Tokens == 0 || !strings.Contains(c.Prompt, "Ticket "+tk.ID) {
				t.Errorf("%s: the context shown is not the ticket's: %d tokens\n%s", r.ID, c.Tokens, c.Prompt)
			}
			// The read_only ticket's contexts say so and show no effectful
			// tool: neither the refund nor the email (which rests on no
			// belief and is an effect all the same), only the lookup.
			if tk.readOnly != (c.Mode == "read_only") || tk.readOnly && !slices.Equal(c.Manifest.Tools, []string{"lookup_order"}) {
				t.Errorf("%s: ticket %s shown mode %s, tools %v", r.ID, tk.ID, c.Mode, c.Manifest.Tools)
			}
		}
	}
	if contexts == 0 || decisions == 0 {
		t.Fatalf("%d compiled contexts, %d decisions", contexts, decisions)
	}
}
