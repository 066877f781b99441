package console_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/budget"
	"github.com/blackboardkernel/bk/internal/inspect"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/toolgate"
)

// TestInboxBudget: an inbox entry shows the budget its call was checked
// against as the decision record holds it (the run, what it spent of
// each limit, its pressure) and how long it has waited since when; a call
// no budget applied to says so.
func TestInboxBudget(t *testing.T) {
	run, err := budget.New(budget.Limits{ToolCalls: 10, Tokens: 5000}, "run-desk", nil)
	if err != nil {
		t.Fatal(err)
	}
	d := newDeskOn(t, memstore.New(), "A1", func(c *toolgate.Config) { c.Budget = run })
	pending, err := inspect.Approvals(context.Background(), d.s, "", time.Now())
	if err != nil || len(pending) != 1 || pending[0].Budget == nil {
		t.Fatalf("approvals %+v %v", pending, err)
	}
	// The refund is the run's second tool call: the snapshot is taken
	// once the call is charged.
	if b := pending[0].Budget; b.RunID != "run-desk" || b.Used[budget.ToolCalls] != 2 || b.Limits[budget.ToolCalls] != 10 {
		t.Errorf("budget %+v", b)
	}
	_, body, _ := d.get(t, "/", aliceToken)
	for _, want := range []string{"budget spent", "run <b>run-desk</b>: tokens 0 of 5000, tool_calls 2 of 10, tool_calls_per_turn 2; pressure 0%", "since 20"} {
		if !strings.Contains(body, want) {
			t.Errorf("inbox lacks %q:\n%s", want, body)
		}
	}

	_, body, _ = newDesk(t, "A1").get(t, "/", aliceToken)
	if !strings.Contains(body, "no budget applies to this call") {
		t.Errorf("inbox of a call without budget:\n%s", body)
	}
}

// stepRE matches a row of the effects page: its status class and its
// attempt cell.
var stepRE = regexp.MustCompile(`<tr class="step (\w+)">(?s:.*?)</td><td>[^<]*</td><td>[^<]*</td>\s*<td>(\d*)</td>`)

// TestEffects: once approved and run, the refund's effects page shows one
// attempt, numbered 1 with its lease, and its result with its code and
// output; the page is reached from the inbox and the trace page, is
// read-only, and refuses an unknown or missing trace.
func TestEffects(t *testing.T) {
	d := newDesk(t, "A1")
	if _, body, _ := d.get(t, "/", aliceToken); !strings.Contains(body, `href="/effects?id=ticket-1"`) {
		t.Errorf("the inbox does not link the effects:\n%s", body)
	}
	if code, body := d.post(t, d.form(t, aliceToken, "approve", "ok"), aliceToken); code != http.StatusOK {
		t.Fatalf("approve: %d\n%s", code, body)
	}
	ctx := context.Background()
	if res, err := d.g.Execute(ctx, d.action); err != nil || res.Outcome != audit.OutcomeExecuted {
		t.Fatal(res, err)
	}

	rows, err := inspect.TraceEffects(ctx, d.s, "", "ticket-1")
	if err != nil || len(rows) != 2 {
		t.Fatalf("effects %+v %v", rows, err)
	}
	refund := rows[1]
	if refund.Tool != "issue_refund" || refund.ActionID != d.action || refund.Attempts != 1 || len(refund.Steps) != 2 {
		t.Fatalf("refund %+v", refund)
	}
	att, res := refund.Steps[0], refund.Steps[1]
	if att.Status != audit.StatusAttempted || att.Attempt != 1 || att.LeaseUntilMS <= att.TimeMS || att.Approval == "" {
		t.Errorf("attempt %+v", att)
	}
	if res.Status != audit.StatusSucceeded || res.Code != reason.EffectSucceeded || res.Output["refund_id"] != "re_ticket-1" || res.Output[audit.KeyEffect] != nil {
		t.Errorf("result %+v", res)
	}

	code, body, h := d.get(t, "/effects?id=ticket-1", aliceToken)
	if code != http.StatusOK || !strings.Contains(h.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Fatalf("effects: %d\n%s", code, body)
	}
	i := strings.Index(body, `id="`+d.action+`"`)
	if i < 0 {
		t.Fatalf("no article for the refund:\n%s", body)
	}
	article := body[i:]
	var attempts []string
	for _, m := range stepRE.FindAllStringSubmatch(article, -1) {
		if m[1] == audit.StatusAttempted {
			attempts = append(attempts, m[2])
		}
	}
	if len(attempts) != 1 || attempts[0] != "1" {
		t.Errorf("refund attempts on the page %q, want one numbered 1:\n%s", attempts, article)
	}
	for _, want := range []string{"issue_refund", "succeeded", string(reason.EffectSucceeded), `&#34;refund_id&#34;: &#34;re_ticket-1&#34;`, "under approval " + att.Approval,
		time.UnixMilli(att.LeaseUntilMS).UTC().Format("2006-01-02 15:04:05.000")} {
		if !strings.Contains(article, want) {
			t.Errorf("the refund's effects lack %q:\n%s", want, article)
		}
	}
	if _, body, _ := d.get(t, "/trace?id=ticket-1", aliceToken); !strings.Contains(body, `href="/effects?id=ticket-1"`) {
		t.Errorf("the trace page does not link the effects:\n%s", body)
	}

	for path, want := range map[string]int{"/effects?id=nope": 404, "/effects": 400} {
		if code, body, _ := d.get(t, path, aliceToken); code != want {
			t.Errorf("%s: %d, want %d\n%s", path, code, want, body)
		}
	}
	req, _ := http.NewRequest("POST", d.srv.URL+"/effects?id=ticket-1", strings.NewReader(url.Values{}.Encode()))
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	if code, _, _ := do(t, req); code != http.StatusMethodNotAllowed {
		t.Errorf("POST /effects: %d, want 405", code)
	}
	if _, err := inspect.TraceEffects(ctx, d.s, "", "nope"); !errors.Is(err, blackboard.ErrNotFound) {
		t.Errorf("effects of an unknown trace: %v", err)
	}
}

// TestAttackEffectsInert: a tool's output holding HTML and a terminal
// escape (the order id the model sent, echoed by lookup_order) is shown
// as text on the effects page.
func TestAttackEffectsInert(t *testing.T) {
	d := newDesk(t, hostile)
	code, body, _ := d.get(t, "/effects?id=ticket-1", aliceToken)
	if code != http.StatusOK || strings.Contains(body, "<script") || strings.Contains(body, "\x1b") ||
		!strings.Contains(body, `&lt;script&gt;alert(1)&lt;/script&gt;\u001b[2J`) {
		t.Errorf("effects page shows the output live: %d\n%s", code, body)
	}
}

// TestEffectsRetry: a refund whose first attempt failed shows both
// attempts, numbered 1 and 2, the second naming the failure it retried,
// then the result.
func TestEffectsRetry(t *testing.T) {
	d := newDesk(t, "A1")
	d.failures.Store(1)
	if code, body := d.post(t, d.form(t, aliceToken, "approve", ""), aliceToken); code != http.StatusOK {
		t.Fatalf("approve: %d\n%s", code, body)
	}
	ctx := context.Background()
	if res, err := d.g.Execute(ctx, d.action); err != nil || res.Outcome != audit.OutcomeExecuted || d.refunds.Load() != 1 {
		t.Fatal(res, err)
	}
	rows, err := inspect.TraceEffects(ctx, d.s, "", "ticket-1")
	if err != nil || len(rows) != 2 {
		t.Fatalf("effects %+v %v", rows, err)
	}
	var got []string
	for _, st := range rows[1].Steps {
		got = append(got, st.Status+"/"+strconv.Itoa(st.Attempt)+"/"+st.PreviousError)
	}
	want := []string{"attempted/1/", "attempted/2/payment API: 503 service unavailable", "succeeded/2/"}
	if rows[1].Attempts != 2 || !slices.Equal(got, want) {
		t.Errorf("refund steps %q (%d attempts), want %q", got, rows[1].Attempts, want)
	}
	_, body, _ := d.get(t, "/effects?id=ticket-1", aliceToken)
	var attempts []string
	for _, m := range stepRE.FindAllStringSubmatch(body[strings.Index(body, `id="`+d.action+`"`):], -1) {
		attempts = append(attempts, m[1]+" "+m[2])
	}
	if !slices.Equal(attempts, []string{"attempted 1", "attempted 2", "succeeded 2"}) || !strings.Contains(body, "the attempt before failed: payment API: 503 service unavailable") {
		t.Errorf("the refund's rows %q:\n%s", attempts, body)
	}
}
