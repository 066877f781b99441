package toolgate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store/memstore"
)

var update = flag.Bool("update", false, "rewrite testdata/golden_records.jsonl from what the gate writes now")

// TestGoldenRecords pins, byte for byte in JSON, every record the gate
// writes for a fixed set of calls: an executed read-only call, refusals
// before the kernel (contract, bad arguments), an effect that fails
// for good, a refund bound to its belief, its repetition (refused by
// the kernel, with causes), and a refund that waits for an
// approval and then runs. The gate builds decision records, effects and
// contexts by hand for speed; this keeps what is recorded from drifting.
// Run with -update to accept a deliberate change.
func TestGoldenRecords(t *testing.T) {
	d := newDesk(t, memstore.New())
	const trace = "golden"
	wantOutcome(t, "lookup", d.call(trace, "support", "", "lookup_order", `{"order_id":"A1"}`), audit.OutcomeExecuted, reason.EffectSucceeded)
	wantOutcome(t, "not permitted", d.call(trace, "researcher", "", "lookup_order", `{"order_id":"A1"}`), audit.OutcomeRefused, reason.ToolNotPermitted)
	wantOutcome(t, "bad args", d.call(trace, "support", "", "lookup_order", `{"order_id":7}`), audit.OutcomeRefused, reason.InvalidArguments)
	d.setEffect("search_kb", func(context.Context, Invocation) (blackboard.Payload, error) {
		return nil, errors.New("index offline")
	})
	wantOutcome(t, "failed", d.call(trace, "researcher", "", "search_kb", `{"query":"refund"}`), audit.OutcomeFailed, reason.EffectFailed)
	d.clock.Advance(time.Second)
	d.ground(trace, "A1")
	wantOutcome(t, "refund", d.refund(trace, "A1", 100), audit.OutcomeExecuted, reason.EffectSucceeded)
	wantOutcome(t, "refund again", d.refund(trace, "A1", 100), audit.OutcomeRefused, reason.DuplicateAction)
	d.ground(trace, "A2")
	res := d.refund(trace, "A2", 800)
	wantOutcome(t, "big refund", res, audit.OutcomePendingApproval, reason.ApprovalRequired)
	d.approve(trace, res.ActionID, "manager", time.Hour)
	wantOutcome(t, "approved refund", d.execute(res.ActionID), audit.OutcomeExecuted, reason.EffectSucceeded)

	var got bytes.Buffer
	for _, r := range d.records() {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		got.Write(b)
		got.WriteByte('\n')
	}
	path := filepath.Join("testdata", "golden_records.jsonl")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		gl, wl := bytes.Split(got.Bytes(), []byte("\n")), bytes.Split(want, []byte("\n"))
		for i := range max(len(gl), len(wl)) {
			var g, w []byte
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if !bytes.Equal(g, w) {
				t.Errorf("record %d differs:\n got %s\nwant %s", i, g, w)
			}
		}
	}
}
