package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/inspect/console"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/rules"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/toolgate"
)

// hostile is an order id a model could send: HTML that would run, and a
// terminal escape that would clear the screen.
const hostile = "<script>alert(1)</script>\x1b[2J"

// desk is an application's gate over a store, with a refund that waits
// for approval in trace ticket-1, and the console over the same store.
type desk struct {
	s       store.Store
	g       *toolgate.Gate
	srv     *httptest.Server
	refunds atomic.Int32 // refunds paid by the effect
	// failures is how many refund attempts fail, retryably, before one
	// is paid.
	failures atomic.Int32
	action   string // the pending refund
}

const (
	aliceToken = "alice-secret-token-0001"
	bobToken   = "bob-secret-token-000002"
)

func newDesk(t *testing.T, order string) *desk { return newDeskOn(t, memstore.New(), order) }

// newDeskOn builds the desk over s; mods change its gate's configuration.
func newDeskOn(t *testing.T, s store.Store, order string, mods ...func(*toolgate.Config)) *desk {
	t.Helper()
	ctx := context.Background()
	d := &desk{s: s}
	tools := []toolgate.Tool{
		{Unscoped: true, Name: "lookup_order", Parameters: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"}},"required":["order_id"]}`),
			Result: "order",
			Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
				return blackboard.Payload{"order_id": inv.Args["order_id"], "amount": 700.0}, nil
			}},
		{Unscoped: true, Name: "issue_refund", Parameters: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"},"amount":{"type":"number"}},"required":["order_id","amount"]}`),
			Requires: []string{"refund_due"}, Result: "refund", Approval: "amount > 500",
			Bindings: []toolgate.Binding{{Arg: "order_id", Percept: "order", Op: "equal"}, {Arg: "amount", Percept: "order", Op: "at_most"}},
			Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
				if d.failures.Add(-1) >= 0 {
					return nil, toolgate.Retryable(toolgate.Recordable(errors.New("payment API: 503 service unavailable")))
				}
				d.refunds.Add(1)
				return blackboard.Payload{"refund_id": "re_" + inv.TraceID}, nil
			}},
	}
	cfg := toolgate.Config{
		Kernel: kernel.Config{Store: d.s, Namespace: "desk",
			BeliefSpecs: []kernel.BeliefSpec{{Kind: "refund_due", DependsOn: []string{"order"}}}},
		Tools:     tools,
		Contracts: map[string][]string{"support": {"lookup_order", "issue_refund"}},
	}
	for _, m := range mods {
		m(&cfg)
	}
	g, err := toolgate.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	d.g = g
	t.Cleanup(func() { g.Close() })
	args, _ := json.Marshal(map[string]any{"order_id": order, "amount": 700})
	call := func(tool string, args json.RawMessage) toolgate.Result {
		res, err := g.Call(ctx, toolgate.Call{Tool: tool, Args: args, Caller: "support", TraceID: "ticket-1"})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	call("lookup_order", json.RawMessage(`{"order_id":`+string(mustJSON(t, order))+`}`))
	if _, err := g.Kernel().Proposer(blackboard.RolePlanner, "analyst").Submit(ctx, kernel.Entry{TraceID: "ticket-1", Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"order"}}}); err != nil {
		t.Fatal(err)
	}
	if res := call("issue_refund", args); res.Outcome != audit.OutcomePendingApproval {
		t.Fatalf("refund: %+v", res)
	}
	pending, err := g.Pending(ctx, "ticket-1")
	if err != nil || len(pending) != 1 {
		t.Fatal(pending, err)
	}
	d.action = pending[0].ActionID

	c, err := console.New(console.Config{Store: d.s, Identity: console.TokenIdentity(map[string]string{aliceToken: "human:alice", bobToken: "human:bob", "support-token-00001": audit.CallerWriter("support"), "support-token-00002": "support"})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	d.srv = httptest.NewServer(c)
	t.Cleanup(d.srv.Close)
	return d
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// get fetches path as the holder of token ("" for none).
func (d *desk) get(t *testing.T, path, token string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest("GET", d.srv.URL+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return do(t, req)
}

func (d *desk) post(t *testing.T, form url.Values, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", d.srv.URL+"/decide", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	code, body, _ := do(t, req)
	return code, body
}

func do(t *testing.T, req *http.Request) (int, string, http.Header) {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b), res.Header
}

var hiddenRE = regexp.MustCompile(`<input type="hidden" name="(\w+)" value="([^"]*)">`)

// form is the decision form the inbox shows token's holder for the
// pending refund, filled with decision and note.
func (d *desk) form(t *testing.T, token, decision, note string) url.Values {
	t.Helper()
	code, body, _ := d.get(t, "/", token)
	if code != http.StatusOK {
		t.Fatalf("inbox: %d\n%s", code, body)
	}
	f := url.Values{"decision": {decision}, "note": {note}}
	for _, m := range hiddenRE.FindAllStringSubmatch(body, -1) {
		f.Set(m[1], html.UnescapeString(m[2]))
	}
	if f.Get("action") != d.action || f.Get("digest") == "" || f.Get("csrf") == "" {
		t.Fatalf("form %v, want action %s", f, d.action)
	}
	return f
}

// approvals counts the approval records of the pending refund.
func (d *desk) approvals(t *testing.T) int {
	n := 0
	for r, err := range d.g.Kernel().Reader().Trace(context.Background(), "ticket-1") {
		if err != nil {
			t.Fatal(err)
		}
		if a, ok := audit.ApprovalOf(r); ok && a.ActionID == d.action {
			n++
		}
	}
	return n
}

// TestInbox: the inbox lists the pending refund in its namespace with its
// committed arguments, its digest, its evidence and its wait, under a
// strict content security policy.
func TestInbox(t *testing.T) {
	d := newDesk(t, "A1")
	code, body, h := d.get(t, "/", aliceToken)
	if code != http.StatusOK {
		t.Fatalf("inbox: %d\n%s", code, body)
	}
	digest, err := toolgate.ArgsDigest(blackboard.Payload{"order_id": "A1", "amount": 700.0})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"namespace desk", "issue_refund", d.action, "ticket-1", `&#34;order_id&#34;: &#34;A1&#34;`, `&#34;amount&#34;: 700`,
		digest, "amount &gt; 500", "belief.refund_due", "percept.order", "present,current,fresh", "constraints in force, passed: none", "rules and bindings, passed: binding: order_id equal order.order_id; binding: amount at_most order.amount", "waiting ", "signed in as <b>human:alice</b>"} {
		if !strings.Contains(body, want) {
			t.Errorf("inbox lacks %q:\n%s", want, body)
		}
	}
	if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src") {
		t.Errorf("CSP %q", csp)
	}
}

// TestApprove: an approval from the console lets the application's gate
// run the refund, exactly once; the decided action leaves the inbox and
// cannot be decided again.
func TestApprove(t *testing.T) {
	d := newDesk(t, "A1")
	code, body := d.post(t, d.form(t, aliceToken, "approve", "checked the order"), aliceToken)
	if code != http.StatusOK || !strings.Contains(body, "approved") {
		t.Fatalf("approve: %d\n%s", code, body)
	}
	ctx := context.Background()
	for range 2 {
		if res, err := d.g.Execute(ctx, d.action); err != nil || res.Outcome != audit.OutcomeExecuted {
			t.Fatal(res, err)
		}
	}
	if n := d.refunds.Load(); n != 1 {
		t.Errorf("%d refunds paid, want 1", n)
	}
	if _, body, _ := d.get(t, "/", bobToken); strings.Contains(body, d.action) {
		t.Errorf("inbox still lists the executed refund:\n%s", body)
	}
	var a audit.Approval
	for r, err := range d.g.Kernel().Reader().Trace(ctx, "ticket-1") {
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := audit.ApprovalOf(r); ok && got.ActionID == d.action {
			a = got
		}
	}
	if a.Approver != "human:alice" || a.Note != "checked the order" || a.Decision != audit.Approved || a.TTL != time.Hour {
		t.Errorf("approval %+v", a)
	}
}

// TestDecideTwice: a second decision on an action already decided is
// refused and writes nothing.
func TestDecideTwice(t *testing.T) {
	d := newDesk(t, "A1")
	f := d.form(t, aliceToken, "approve", "")
	if code, body := d.post(t, f, aliceToken); code != http.StatusOK {
		t.Fatalf("approve: %d\n%s", code, body)
	}
	f.Set("decision", "deny")
	if code, body := d.post(t, f, aliceToken); code != http.StatusConflict || !strings.Contains(body, "no longer waits") {
		t.Errorf("second decision: %d\n%s", code, body)
	}
	if n := d.approvals(t); n != 1 {
		t.Errorf("%d approval records, want 1", n)
	}
}

// TestDecideAtOnce: of two people deciding one action at the same moment,
// one is recorded and the other told the action no longer waits.
func TestDecideAtOnce(t *testing.T) {
	d := newDesk(t, "A1")
	forms := []url.Values{d.form(t, aliceToken, "approve", ""), d.form(t, bobToken, "deny", "")}
	codes := make([]int, 2)
	var wg sync.WaitGroup
	for i, token := range []string{aliceToken, bobToken} {
		wg.Go(func() { codes[i], _ = d.post(t, forms[i], token) })
	}
	wg.Wait()
	if slices.Sort(codes); codes[0] != http.StatusOK || codes[1] != http.StatusConflict {
		t.Errorf("statuses %v, want one 200 and one 409", codes)
	}
	if n := d.approvals(t); n != 1 {
		t.Errorf("%d approval records, want 1", n)
	}
}

// TestDeny: a denial from the console sends the refund to the fallback
// when the application's gate resumes; nothing is paid, and the trace page
// shows who denied it and why.
func TestDeny(t *testing.T) {
	d := newDesk(t, "A1")
	code, body := d.post(t, d.form(t, bobToken, "deny", "the carrier has it signed for"), bobToken)
	if code != http.StatusOK || !strings.Contains(body, "denied") {
		t.Fatalf("deny: %d\n%s", code, body)
	}
	res, err := d.g.Execute(context.Background(), d.action)
	if err != nil || res.Outcome == audit.OutcomeExecuted || res.Code != reason.ApprovalDenied {
		t.Fatal(res, err)
	}
	if n := d.refunds.Load(); n != 0 {
		t.Errorf("%d refunds paid after a denial", n)
	}
	code, body, _ = d.get(t, "/trace?record="+url.QueryEscape(d.action), aliceToken)
	for _, want := range []string{"denied by human:bob", "the carrier has it signed for", "queue_for_review"} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("trace page lacks %q: %d\n%s", want, code, body)
		}
	}
}

// TestTrace: the trace page shows a trace's timeline, as a picture and as
// text, and a record's explanation; an unknown trace or record is 404, a request naming
// neither is 400.
func TestTrace(t *testing.T) {
	d := newDesk(t, "A1")
	code, body, _ := d.get(t, "/trace?record="+url.QueryEscape(d.action), aliceToken)
	if code != http.StatusOK || !strings.Contains(body, "Explanation of "+d.action) || !strings.Contains(body, "Timeline") ||
		!strings.Contains(body, "issue_refund") || !strings.Contains(body, "pending") {
		t.Errorf("trace page: %d\n%s", code, body)
	}
	if !strings.Contains(body, `<figure class="timeline"><svg xmlns="http://www.w3.org/2000/svg"`) || !strings.Contains(body, `data-lane="approval"`) {
		t.Errorf("trace page without the timeline's picture:\n%s", body)
	}
	for path, want := range map[string]int{"/trace?id=nope": 404, "/trace?record=nope": 404, "/trace": 400} {
		if code, body, _ := d.get(t, path, aliceToken); code != want {
			t.Errorf("%s: %d, want %d\n%s", path, code, want, body)
		}
	}
}

// TestAttackStaleDigest: a form whose digest is not the action's current
// arguments' (the page showed other arguments) is refused, says why and
// records nothing.
func TestAttackStaleDigest(t *testing.T) {
	d := newDesk(t, "A1")
	f := d.form(t, aliceToken, "approve", "")
	stale, err := toolgate.ArgsDigest(blackboard.Payload{"order_id": "A1", "amount": 70.0})
	if err != nil {
		t.Fatal(err)
	}
	f.Set("digest", stale)
	code, body := d.post(t, f, aliceToken)
	if code != http.StatusConflict || !strings.Contains(body, "not those the page showed") {
		t.Errorf("stale digest: %d\n%s", code, body)
	}
	if n := d.approvals(t); n != 0 {
		t.Errorf("%d approval records after a stale digest", n)
	}
}

// TestAttackCSRF: a decision without the CSRF token, or with another
// identity's, is refused and records nothing.
func TestAttackCSRF(t *testing.T) {
	d := newDesk(t, "A1")
	f := d.form(t, aliceToken, "approve", "")
	bobs := d.form(t, bobToken, "approve", "").Get("csrf")
	for name, token := range map[string]string{"missing": "", "another identity's": bobs} {
		f.Set("csrf", token)
		if code, body := d.post(t, f, aliceToken); code != http.StatusForbidden || !strings.Contains(body, "CSRF") {
			t.Errorf("%s CSRF token: %d\n%s", name, code, body)
		}
	}
	if n := d.approvals(t); n != 0 {
		t.Errorf("%d approval records without a CSRF token", n)
	}
}

// TestAttackIdentity: a request without an identity, or with a token the
// console does not know, is refused, whatever it asks; nothing is read or
// recorded.
func TestAttackIdentity(t *testing.T) {
	d := newDesk(t, "A1")
	f := d.form(t, aliceToken, "approve", "")
	for _, token := range []string{"", "not-a-known-token-000"} {
		for _, path := range []string{"/", "/trace?id=ticket-1"} {
			if code, body, h := d.get(t, path, token); code != http.StatusUnauthorized || strings.Contains(body, "issue_refund") ||
				h.Get("WWW-Authenticate") == "" {
				t.Errorf("GET %s with token %q: %d\n%s", path, token, code, body)
			}
		}
		if code, body := d.post(t, f, token); code != http.StatusUnauthorized {
			t.Errorf("POST with token %q: %d\n%s", token, code, body)
		}
	}
	if n := d.approvals(t); n != 0 {
		t.Errorf("%d approval records without an identity", n)
	}
}

// TestAttackCrossOrigin: a browser's cross-site POST is refused even with
// a valid form, and records nothing.
func TestAttackCrossOrigin(t *testing.T) {
	d := newDesk(t, "A1")
	f := d.form(t, aliceToken, "approve", "")
	req, _ := http.NewRequest("POST", d.srv.URL+"/decide", strings.NewReader(f.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if code, body, _ := do(t, req); code != http.StatusForbidden || !strings.Contains(body, "cross-origin") {
		t.Errorf("cross-site POST: %d\n%s", code, body)
	}
	if n := d.approvals(t); n != 0 {
		t.Errorf("%d approval records from a cross-site POST", n)
	}
}

// TestAttackProposer: the caller that proposed the refund cannot approve
// it from the console, named as the gate records its writer or by its
// caller name.
func TestAttackProposer(t *testing.T) {
	d := newDesk(t, "A1")
	for _, token := range []string{"support-token-00001", "support-token-00002"} {
		code, body := d.post(t, d.form(t, token, "approve", ""), token)
		if code != http.StatusForbidden || !strings.Contains(body, "you proposed this action") {
			t.Errorf("proposer: %d\n%s", code, body)
		}
	}
	if n := d.approvals(t); n != 0 {
		t.Errorf("%d approval records by the proposer", n)
	}
}

// TestAttackHTMLInert: HTML and terminal escapes in an argument and in a
// note are shown as text: no tag reaches the page, and the escape reads
// as \x1b.
func TestAttackHTMLInert(t *testing.T) {
	d := newDesk(t, hostile)
	_, body, _ := d.get(t, "/", aliceToken)
	if strings.Contains(body, "<script") || strings.Contains(body, "\x1b") || !strings.Contains(body, `&lt;script&gt;alert(1)&lt;/script&gt;\u001b[2J`) {
		t.Errorf("inbox shows the order id live:\n%s", body)
	}
	note := "<img src=x onerror=alert(1)>\x1b]52;c;Zm9v\x07"
	if code, body := d.post(t, d.form(t, aliceToken, "deny", note), aliceToken); code != http.StatusOK {
		t.Fatalf("deny: %d\n%s", code, body)
	}
	if _, err := d.g.Execute(context.Background(), d.action); err != nil {
		t.Fatal(err)
	}
	_, body, _ = d.get(t, "/trace?record="+url.QueryEscape(d.action), aliceToken)
	if strings.Contains(body, "<img") || strings.Contains(body, "<script") || strings.ContainsAny(body, "\x1b\x07") ||
		!strings.Contains(body, `&lt;img src=x onerror=alert(1)&gt;\x1b]52;c;Zm9v\x07`) {
		t.Errorf("trace page shows stored text live:\n%s", body)
	}
}

// TestConfig: Namespace keeps the console to one namespace (another's
// approvals and traces are not shown), Clock dates the waits, TTL sets the
// approval's life.
func TestConfig(t *testing.T) {
	d := newDesk(t, "A1")
	f := d.form(t, aliceToken, "approve", "")
	serve := func(cfg console.Config) func(r *http.Request) *httptest.ResponseRecorder {
		// httptest's requests name the host example.com.
		cfg.Store, cfg.Identity, cfg.Hosts = d.s, console.HeaderIdentity("X-User"), []string{"example.com"}
		c, err := console.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return func(r *http.Request) *httptest.ResponseRecorder {
			r.Header.Set("X-User", "human:carol")
			w := httptest.NewRecorder()
			c.ServeHTTP(w, r)
			return w
		}
	}
	decide := func(do func(*http.Request) *httptest.ResponseRecorder) *httptest.ResponseRecorder {
		w := do(httptest.NewRequest("GET", "/", nil))
		f.Set("csrf", hiddenRE.FindStringSubmatch(w.Body.String())[2])
		r := httptest.NewRequest("POST", "/decide", strings.NewReader(f.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return do(r)
	}

	other := serve(console.Config{Namespace: "other"})
	if w := other(httptest.NewRequest("GET", "/", nil)); strings.Contains(w.Body.String(), d.action) || !strings.Contains(w.Body.String(), "No approvals pending") {
		t.Errorf("namespace other lists desk's approval:\n%s", w.Body)
	}
	if w := other(httptest.NewRequest("GET", "/trace?id=ticket-1", nil)); w.Code != http.StatusNotFound {
		t.Errorf("namespace other shows desk's trace: %d\n%s", w.Code, w.Body)
	}

	later := serve(console.Config{Namespace: "desk", Clock: func() time.Time { return time.Now().Add(2*time.Hour + 30*time.Second) },
		TTL: 5 * time.Minute})
	if w := later(httptest.NewRequest("GET", "/", nil)); !strings.Contains(w.Body.String(), "waiting 2h00m") {
		t.Errorf("no two-hour wait:\n%s", w.Body)
	}
	if w := decide(later); w.Code != http.StatusOK {
		t.Fatalf("decide: %d\n%s", w.Code, w.Body)
	}
	for r, err := range d.g.Kernel().Reader().Trace(context.Background(), "ticket-1") {
		if a, ok := audit.ApprovalOf(r); err != nil || (ok && a.ActionID == d.action && (a.TTL != 5*time.Minute || a.Approver != "human:carol")) {
			t.Errorf("approval %+v, %v", a, err)
		}
	}
}

// TestHeaderIdentity: behind a proxy, the header names the approver; a
// request without it is refused.
func TestHeaderIdentity(t *testing.T) {
	c, err := console.New(console.Config{Store: memstore.New(), Identity: console.HeaderIdentity("X-Forwarded-User"), Hosts: []string{"example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for user, want := range map[string]int{"": 401, "carol": 200, "bad\tname": 401} {
		r := httptest.NewRequest("GET", "/", nil)
		if user != "" {
			r.Header.Set("X-Forwarded-User", user)
		}
		w := httptest.NewRecorder()
		c.ServeHTTP(w, r)
		if w.Code != want || want == 200 && !strings.Contains(w.Body.String(), "carol") {
			t.Errorf("user %q: %d, want %d\n%s", user, w.Code, want, w.Body)
		}
	}
}

// TestNew: a console without a store or an identity, or with a bad TTL,
// is not built, and New names every problem at once; a zero TTL is the
// default.
func TestNew(t *testing.T) {
	id := console.HeaderIdentity("X-User")
	for name, cfg := range map[string]console.Config{
		"no identity":  {Store: memstore.New()},
		"no store":     {Identity: id},
		"negative TTL": {Store: memstore.New(), Identity: id, TTL: -time.Second},
		"long TTL":     {Store: memstore.New(), Identity: id, TTL: audit.MaxApprovalTTL + 1},
	} {
		if _, err := console.New(cfg); !errors.Is(err, console.ErrInvalidConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
	_, err := console.New(console.Config{TTL: -time.Second})
	for _, want := range []string{"no store", "no identity", "approval TTL"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("every problem at once: %v lacks %q", err, want)
		}
	}
	c, err := console.New(console.Config{Store: memstore.New(), Identity: id})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

// TestReadTokens: a token file maps tokens to names; a short token, a
// line without a name, a token given twice or an empty file is refused.
func TestReadTokens(t *testing.T) {
	dir := t.TempDir()
	write := func(text string) string {
		p := filepath.Join(dir, "tokens")
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	got, err := console.ReadTokens(write("# approvers\n\n" + aliceToken + " human:alice\n  " + bobToken + "\thuman:bob\n"))
	if err != nil || len(got) != 2 || got[aliceToken] != "human:alice" || got[bobToken] != "human:bob" {
		t.Errorf("tokens %v, %v", got, err)
	}
	for _, bad := range []string{"", "# none\n", "short human:alice\n", aliceToken + "\n", aliceToken + " a\n" + aliceToken + " b\n", aliceToken + " a b\n"} {
		if _, err := console.ReadTokens(write(bad)); !errors.Is(err, console.ErrInvalidConfig) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if _, err := console.ReadTokens(filepath.Join(dir, "missing")); !errors.Is(err, console.ErrInvalidConfig) {
		t.Errorf("missing file: %v", err)
	}
}

// TestBasicAuth: a browser gives its token as the basic-auth password.
func TestBasicAuth(t *testing.T) {
	id := console.TokenIdentity(map[string]string{aliceToken: "human:alice"})
	r := httptest.NewRequest("GET", "/", nil)
	r.SetBasicAuth("anything", aliceToken)
	if name, ok := id(r); !ok || name != "human:alice" {
		t.Errorf("basic auth: %q %v", name, ok)
	}
	r.SetBasicAuth("human:alice", "wrong-token-000000000")
	if name, ok := id(r); ok {
		t.Errorf("wrong password named %q", name)
	}
}

// TestDecideAcrossConsoles: two consoles over one store, many people
// deciding one action at once through both: exactly one decision is
// recorded, every other request is told so (409), none fails (500).
func TestDecideAcrossConsoles(t *testing.T) {
	d := newDesk(t, "A1")
	c2, err := console.New(console.Config{Store: d.s, Identity: console.TokenIdentity(map[string]string{aliceToken: "human:alice", bobToken: "human:bob"})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c2.Close() })
	srv2 := httptest.NewServer(c2)
	t.Cleanup(srv2.Close)
	d2 := &desk{s: d.s, g: d.g, action: d.action, srv: srv2}
	type post struct {
		d     *desk
		form  url.Values
		token string
	}
	var posts []post
	for i := range 6 {
		token, decision := aliceToken, "approve"
		if i%2 == 1 {
			token, decision = bobToken, "deny"
		}
		dd := d
		if i%3 == 0 {
			dd = d2
		}
		posts = append(posts, post{dd, dd.form(t, token, decision, ""), token})
	}
	codes := make([]int, len(posts))
	var wg sync.WaitGroup
	for i, p := range posts {
		wg.Go(func() { codes[i], _ = p.d.post(t, p.form, p.token) })
	}
	wg.Wait()
	ok := 0
	for _, c := range codes {
		switch c {
		case http.StatusOK:
			ok++
		case http.StatusConflict:
		default:
			t.Errorf("status %d in %v, want 200 or 409", c, codes)
		}
	}
	if ok != 1 {
		t.Errorf("statuses %v, want exactly one 200", codes)
	}
	if n := d.approvals(t); n != 1 {
		t.Errorf("%d decision records, want 1", n)
	}
}

// TestInboxRules: the inbox names the rules on the action's type that the
// action passed, read from the policy snapshot its decision record names,
// and not a rule of another action type.
func TestInboxRules(t *testing.T) {
	rs, err := rules.New(rules.OnAction("refund_at_most_1000", "issue_refund", "action.amount <= 1000.0"),
		rules.OnAction("lookups_name_an_order", "lookup_order", `action.order_id != ""`))
	if err != nil {
		t.Fatal(err)
	}
	d := newDeskOn(t, memstore.New(), "A1", func(c *toolgate.Config) { c.Kernel.Validators = []kernel.Validator{rs} })
	_, body, _ := d.get(t, "/", aliceToken)
	if !strings.Contains(body, "rule refund_at_most_1000: action.amount &lt;= 1000.0") || strings.Contains(body, "lookups_name_an_order") {
		t.Errorf("inbox rules:\n%s", body)
	}
}
