package inspect_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/inspect"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/sqlitestore"
)

// hostile is what a model (a tool name), a tool (a reason) or anyone who
// can write a record may put into stored text: a clipboard write (OSC 52),
// an erase-line (CSI 2K) and a carriage return, a C1 CSI, DEL, a
// right-to-left override and an isolate, and a newline followed by a
// forged timeline line.
const hostile = "\x1b]52;c;cGF5IG1l\x07\x1b[2K\r\u009b2K\x7f\u202e\u2066gnp.exe\n  t9   forged"

// hostileDatabase copies the tool-gate database into a new store with
// hostile text after every tool name, kind, trace id, writer and code,
// wherever it is stored (ids, references and payloads alike, so that the
// records still link up).
func hostileDatabase(t *testing.T) (db string, traces []string) {
	t.Helper()
	src := toolgateDatabase(t)
	in, err := sqlitestore.OpenReadOnly(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	db = filepath.Join(t.TempDir(), "hostile.db")
	out, err := sqlitestore.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	enc, _ := json.Marshal(hostile)
	h := string(enc[1 : len(enc)-1])
	var pairs []string
	for _, s := range []string{"issue_refund", "lookup_order", "delete_account", "unnamed_tool", "refund_due", "ticket-1", "ticket-2", "ticket-3",
		"human:alice", "support", "analyst", audit.PolicyTrace("desk"), string(reason.NoCommittedBelief), "TOOL_UNKNOWN", "amount > 500"} {
		pairs = append(pairs, s, s+h)
	}
	pairs = append(pairs, `"namespace":"desk"`, `"namespace":"desk`+h+`"`)
	rep := strings.NewReplacer(pairs...)
	ctx := context.Background()
	for ts, err := range store.ListTraces(ctx, in, "") {
		if err != nil {
			t.Fatal(err)
		}
		traces = append(traces, ts.TraceID+hostile)
		for r, err := range in.ListTrace(ctx, ts.Namespace, ts.TraceID) {
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			var hr blackboard.Record
			if err := json.Unmarshal([]byte(rep.Replace(string(b))), &hr); err != nil {
				t.Fatal(err)
			}
			if err := out.Apply(ctx, store.Batch{Appends: []blackboard.Record{hr}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return db, traces
}

// inert reports the first character of out a terminal would act on: a
// control byte other than the newline, DEL, a C1 control, a bidirectional
// control, a byte that is not UTF-8; and a line that the hostile text
// forged.
func inert(out string) string {
	for i, r := range out {
		switch {
		case r == utf8.RuneError:
			return fmt.Sprintf("a byte that is not UTF-8 at %d", i)
		case r < 0x20 && r != '\n', r >= 0x7f && r <= 0x9f,
			r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x2028 && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return fmt.Sprintf("raw %U at %d", r, i)
		}
	}
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, "  t9   forged") {
			return "a forged line"
		}
	}
	return ""
}

// TestAttackInspectorEscapes: records whose kind, tool name, trace id,
// writer, code and reason hold terminal escapes (a clipboard write, an
// erase-line, C1 controls, bidirectional overrides, a forged line) are
// printed inert by every bk command, as text and as JSON, and the
// hostile text still shows, escaped.
func TestAttackInspectorEscapes(t *testing.T) {
	db, traces := hostileDatabase(t)
	var runs [][]string
	for _, cmd := range []string{"traces", "stats", "approvals", "effects", "export"} {
		runs = append(runs, []string{cmd}, []string{cmd, "--json"})
	}
	var records []string
	for _, tr := range traces {
		runs = append(runs, []string{"timeline", tr}, []string{"timeline", tr, "--json"})
		tl, err := func() (inspect.TimelineReport, error) {
			s, err := sqlitestore.OpenReadOnly(context.Background(), db)
			if err != nil {
				return inspect.TimelineReport{}, err
			}
			defer s.Close()
			return inspect.Timeline(context.Background(), s, "", tr)
		}()
		if err != nil {
			t.Fatalf("timeline of %q: %v", tr, err)
		}
		for _, e := range tl.Events {
			records = append(records, e.Record)
		}
	}
	for _, r := range records {
		runs = append(runs, []string{"explain", r}, []string{"explain", r, "--json"})
	}
	runs = append(runs, []string{"explain", "actions:" + hostile + ":1"}, []string{"timeline", "no such " + hostile})
	var shown bool
	for _, args := range runs {
		_, out, errOut := bk(t, append([]string{"--db", db}, args...)...)
		for _, o := range []string{out, errOut} {
			if what := inert(o); what != "" {
				t.Errorf("bk %q printed %s:\n%s", args, what, o)
			}
		}
		shown = shown || strings.Contains(out, `\x1b]52;c;cGF5IG1l\x07`) || strings.Contains(out, `\u001b]52;c;cGF5IG1l\u0007`)
	}
	if !shown {
		t.Error("the hostile text reached no output: the test proves nothing")
	}
	if len(records) < 10 {
		t.Errorf("only %d records explained", len(records))
	}
}

// TestAttackInspectorLeavesNoFiles: every bk command, run on a cleanly
// closed store, leaves the store's directory as it found it.
func TestAttackInspectorLeavesNoFiles(t *testing.T) {
	db := toolgateDatabase(t)
	dir := filepath.Dir(db)
	list := func() []string {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return names
	}
	if names := list(); len(names) != 1 {
		t.Fatalf("the writer left %v", names)
	}
	for _, args := range [][]string{{"traces"}, {"timeline", "ticket-2"}, {"explain", "actions:ticket-2:1"}, {"stats"}, {"approvals"}, {"effects"}, {"export"}} {
		bk(t, append([]string{"--db", db}, args...)...)
		if names := list(); len(names) != 1 {
			t.Fatalf("bk %s left %v", args[0], names)
		}
	}
}
