package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/internal/inspect"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/store/sqlitestore"
	"github.com/blackboardkernel/bk/toolgate"
)

// With --approver person the desk leaves the refunds above 500 waiting and
// names the commands; a person decides them between runs through the
// gate's Approver (as bk approve and bk serve do); the next run applies the
// decisions and finishes the tickets: an approved refund is paid exactly
// once, a denied one takes the fallback and is never paid.
func TestPersonApproves(t *testing.T) {
	for _, tc := range []struct {
		name    string
		approve bool
		paid    map[string]float64 // per order, after the second run
	}{
		{"approved", true, map[string]float64{"A1": 80, "A2": 120, "A3": 750, "A4": 900}},
		{"denied", false, map[string]float64{"A1": 80, "A2": 120}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "desk.db")
			first := runDesk(t, "--db", db, "--approver", "person")
			for _, s := range []string{
				"T3: 1 refund(s) wait for a person's approval; this ticket goes on in the next run",
				"T4: 1 refund(s) wait for a person's approval",
				"serve --token-file FILE", "approve --as NAME --digest sha256:",
				"T3 actions@support_desk:T3:15 no result yet (waits for approval): 0 payments",
			} {
				if !strings.Contains(first, s) {
					t.Errorf("first run lacks %q\n%s", s, first)
				}
			}
			if strings.Contains(first, "T3 message 2") || strings.Contains(first, approver) {
				t.Errorf("the first run went on past the approval, or the scripted supervisor decided\n%s", first)
			}
			if got := paidByOrder(t, db+".world"); len(got) != 2 {
				t.Fatalf("after the first run the ledger has %v, want A1 and A2 only", got)
			}

			checkDB(t, db)
			decideAsPerson(t, db, tc.approve)
			second := runDesk(t, "--db", db, "--approver", "person")
			want := []string{"T3: a person decided what waited for approval; the supervisor applies it", "T3 message 2, from the desk",
				"T4 message 2, from the desk", "Every refund happened exactly once: 4 committed refunds"}
			if tc.approve {
				want = append(want, "T3 actions@support_desk:T3:15 paid  750.00", "approvals: 2 approved, 0 denied")
			} else {
				want = append(want, "T3 actions@support_desk:T3:15 not run: APPROVAL_DENIED by person:ana", "approvals: 0 approved, 2 denied")
			}
			for _, s := range want {
				if !strings.Contains(second, s) {
					t.Errorf("second run lacks %q\n%s", s, second)
				}
			}
			// A third run has nothing left: nothing waits, nothing is paid again.
			checkDB(t, db)
			third := runDesk(t, "--db", db, "--approver", "person")
			checkDB(t, db)
			if !strings.Contains(third, "Resuming: an earlier run handled 8 of 8 messages.") || strings.Contains(third, "wait for a person's approval") {
				t.Errorf("third run\n%s", third)
			}
			got := paidByOrder(t, db+".world")
			if len(got) != len(tc.paid) {
				t.Errorf("ledger %v, want %v", got, tc.paid)
			}
			for o, amount := range tc.paid {
				if got[o] != amount {
					t.Errorf("ledger %v, want %v", got, tc.paid)
				}
			}
		})
	}
}

// decideAsPerson approves (or denies) every refund that waits, as the
// person person:ana, through a gate without tools over the desk's file, as
// bk approve does.
func decideAsPerson(t *testing.T, db string, approve bool) {
	t.Helper()
	ctx := context.Background()
	s, err := sqlitestore.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	g, err := toolgate.New(ctx, toolgate.Config{Kernel: kernel.Config{Store: s, Namespace: "support_desk"}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	screen := g.Approver("person:ana")
	n := 0
	// The list a person sees: bk approvals, and bk serve's inbox.
	pending, err := inspect.Approvals(ctx, s, "support_desk", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pending {
		v := audit.Approved
		if !approve {
			v = audit.Denied
		}
		ans := audit.Approval{TraceID: p.TraceID, ActionID: p.ActionID, Digest: p.Digest, Decision: v, Note: "looked at the evidence"}
		if _, err := screen.Decide(ctx, ans); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 2 {
		t.Fatalf("decided %d refunds, want 2 (T3's and T4's)", n)
	}
}

// paidByOrder sums the world journal's payments by order, failing on two
// payments under one key.
func paidByOrder(t *testing.T, path string) map[string]float64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	keys, orders := map[string]bool{}, map[string]float64{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var ev event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("journal line %q: %v", line, err)
		}
		if p := ev.Payment; p != nil {
			if keys[p.Key] {
				t.Errorf("two payments under key %s", p.Key)
			}
			keys[p.Key] = true
			orders[p.OrderID] += p.Amount
		}
	}
	return orders
}
