package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/budget"
	"github.com/blackboardkernel/bk/inspect/console"
	"github.com/blackboardkernel/bk/internal/inspect"
	"github.com/blackboardkernel/bk/internal/kernelhook"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/sqlitestore"
	"github.com/blackboardkernel/bk/toolgate"
)

const (
	aliceToken = "alice-browser-token-0001"
	// hostile is text a model could send, as a refund's reason and as a
	// tool's name: markup that would run, and a terminal escape that
	// would clear the screen.
	hostile = "<img src=x onerror=alert(1)><script>alert(2)</script>\x1b[2J"
	// namespace is support_desk's; own, the test's gate's, kept apart so
	// that support_desk's ledger check sees only its own refunds.
	namespace, own = "support_desk", "browser_test"
	// deskRun is the run budget the test's gate charges its calls to.
	deskRun = "browser-desk-run"
)

// chromium finds the browser, or skips the test when there is none;
// under CI=true a missing browser fails it instead.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{os.Getenv("BK_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	const where = "no Chromium found ($BK_CHROMIUM, or chromium, chromium-browser or google-chrome on the PATH)"
	if os.Getenv("CI") == "true" {
		t.Fatal(where + ", and CI=true: CI must run the browser test (.ci/run installs Debian's chromium)")
	}
	t.Skip(where + ": the browser test needs one (apt-get install chromium, or set BK_CHROMIUM)")
	return ""
}

// desk is an application's gate over the store support_desk filled, with
// its tools lookup_order and issue_refund (a refund over 500 waits for
// approval), every call charged to the run budget deskRun, and the
// payment ledger the refunds write to.
type desk struct {
	s store.Store
	g *toolgate.Gate

	mu     sync.Mutex
	ledger map[string]int // payments, by trace
}

func newDesk(t *testing.T, s store.Store) *desk {
	t.Helper()
	d := &desk{s: s, ledger: map[string]int{}}
	tools := []toolgate.Tool{
		{Unscoped: true, Name: "lookup_order", Parameters: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"}},"required":["order_id"]}`),
			Result: "order",
			Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
				return blackboard.Payload{"order_id": inv.Args["order_id"], "amount": 700.0}, nil
			}},
		{Unscoped: true, Name: "issue_refund", Parameters: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"},"amount":{"type":"number"},"reason":{"type":"string"}},"required":["order_id","amount","reason"]}`),
			Requires: []string{"refund_due"}, Result: "refund", Approval: "amount > 500",
			Bindings: []toolgate.Binding{{Arg: "order_id", Percept: "order", Op: "equal"}, {Arg: "amount", Percept: "order", Op: "at_most"}},
			Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
				d.mu.Lock()
				defer d.mu.Unlock()
				d.ledger[inv.TraceID]++
				return blackboard.Payload{"refund_id": "re_" + inv.TraceID}, nil
			}},
	}
	run, err := budget.New(budget.Limits{ToolCalls: 40, Tokens: 100_000}, deskRun, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := toolgate.New(context.Background(), toolgate.Config{
		Kernel: kernel.Config{
			Store:       s,
			Namespace:   own,
			BeliefSpecs: []kernel.BeliefSpec{{Kind: "refund_due", DependsOn: []string{"order"}}},
		},
		Tools:     tools,
		Budget:    run,
		Contracts: map[string][]string{"support": {"lookup_order", "issue_refund"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	d.g = g
	return d
}

// refund has the model look order up in trace and ask for a 700 refund
// of it for reason, which waits for approval; it returns the action.
func (d *desk) refund(t *testing.T, trace, order, why string) string {
	t.Helper()
	ctx := context.Background()
	call := func(tool string, args map[string]any) toolgate.Result {
		b, _ := json.Marshal(args)
		res, err := d.g.Call(ctx, toolgate.Call{Tool: tool, Args: b, Caller: "support", TraceID: trace})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	call("lookup_order", map[string]any{"order_id": order})
	if _, err := d.g.Kernel().Proposer(blackboard.RolePlanner, "analyst").Submit(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"order"}}}); err != nil {
		t.Fatal(err)
	}
	if res := call("issue_refund", map[string]any{"order_id": order, "amount": 700, "reason": why}); res.Outcome != audit.OutcomePendingApproval {
		t.Fatalf("%s refund: %+v", trace, res)
	}
	pending, err := d.g.Pending(ctx, trace)
	if err != nil || len(pending) != 1 {
		t.Fatal(pending, err)
	}
	return pending[0].ActionID
}

// approvals counts the approvals and denials given for action.
func (d *desk) approvals(t *testing.T, trace, action string) int {
	t.Helper()
	n := 0
	for r, err := range d.g.Kernel().Reader().Trace(context.Background(), trace) {
		if err != nil {
			t.Fatal(err)
		}
		if a, ok := audit.ApprovalOf(r); ok && a.ActionID == action {
			n++
		}
	}
	return n
}

// results counts the effect log's successful results of action.
func (d *desk) results(t *testing.T, trace, action string) int {
	t.Helper()
	n := 0
	for r, err := range d.s.ListTrace(context.Background(), kernelhook.Namespace(d.g.Kernel()), trace) {
		if err != nil {
			t.Fatal(err)
		}
		if e, ok := audit.EffectOf(r); ok && e.ActionID == action && e.Status == audit.StatusSucceeded {
			n++
		}
	}
	return n
}

// fill runs examples/support_desk with --db db --approver person, as a
// person would before `bk serve --db db`: its four tickets leave
// committed, refused and paid refunds in the store, and two refunds (T3's
// and T4's) waiting for the person. Run again, it applies what the person
// decided and finishes those tickets; fill returns its report.
func fill(t *testing.T, db string) string {
	t.Helper()
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "run", "./examples/support_desk", "--db", db, "--approver", "person")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "BK_LLM_URL=") // the scripted model
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Every refund happened exactly once") {
		t.Fatalf("support_desk --db --approver person: %v\n%s", err, out)
	}
	return string(out)
}

// TestBrowser drives the console in headless Chromium over a store
// support_desk filled, leaving two refunds to a person, to which the
// test's gate adds four more waiting for approval: the inbox lists each
// with its evidence; a person approves support_desk's 750 refund and
// denies its 900 one in the browser, and support_desk's next run pays the
// first exactly once and not the second; approving one
// lets the gate pay it exactly once; denying one sends it to review; a
// form whose digest was changed, a form without its CSRF token and a
// request without identity are refused and record nothing; a reason and
// a tool name holding markup and a terminal escape are shown as text and
// run nothing. Screenshots of the inbox and of two timelines are written
// to $BK_SCREENSHOTS (or the test's temporary directory).
func TestBrowser(t *testing.T) {
	bin := chromium(t)
	shots := os.Getenv("BK_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "desk.db")
	if out := fill(t, db); !strings.Contains(out, "T3: 1 refund(s) wait for a person's approval") {
		t.Fatalf("support_desk left no refund to a person:\n%s", out)
	}

	ctx := context.Background()
	s, err := sqlitestore.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c, err := console.New(console.Config{Store: s, Identity: console.TokenIdentity(map[string]string{aliceToken: "human:alice"})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.WindowSize(1000, 1150), chromedp.NoSandbox)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()

	// signIn makes every later request of the tab carry token as a bearer
	// token ("" for none), as a token-file deployment expects.
	signIn := func(token string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			h := network.Headers{}
			if token != "" {
				h["Authorization"] = "Bearer " + token
			}
			_, err := cdp.Call(ctx, tg, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: h})
			return err
		})
	}
	// A dialog would mean stored text ran as script.
	var dialogs atomic.Int32
	watch := chromedp.Func(func(_ context.Context, tg *chromedp.Target) error {
		events := cdp.Events(bctx, tg, page.JavascriptDialogOpening)
		go func() {
			for _, err := range events {
				if err != nil {
					return
				}
				dialogs.Add(1)
			}
		}()
		return nil
	})
	// The first run starts the browser, and lives as long as it: no timeout.
	if err := chromedp.Do(bctx, signIn(aliceToken), watch); err != nil {
		t.Fatal(err)
	}
	step := func(ctx context.Context) (context.Context, context.CancelFunc) {
		return context.WithTimeout(ctx, 30*time.Second)
	}
	// open loads path and returns its status and its body's text.
	open := func(t *testing.T, path string) (int64, string) {
		t.Helper()
		ctx, cancel := step(bctx)
		defer cancel()
		res, err := chromedp.RunResponse(ctx, chromedp.Navigate(srv.URL+path))
		if refused(err) {
			return http.StatusUnauthorized, ""
		}
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		text, err := chromedp.Run(ctx, textOf("body"))
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		return res.Status, text
	}
	// decide loads the inbox, applies the changes to it, and presses
	// action's decision button; it returns the answer's status and text.
	decide := func(t *testing.T, action, decision string, changes ...chromedp.Action[chromedp.Void]) (int64, string) {
		t.Helper()
		if code, text := open(t, "/"); code != http.StatusOK {
			t.Fatalf("inbox: %d\n%s", code, text)
		}
		ctx, cancel := step(bctx)
		defer cancel()
		if err := chromedp.Do(ctx, changes...); err != nil {
			t.Fatal(err)
		}
		res, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(article(action)+` button[value="`+decision+`"]`)))
		if refused(err) {
			return http.StatusUnauthorized, ""
		}
		if err != nil {
			t.Fatalf("%s %s: %v", decision, action, err)
		}
		text, err := chromedp.Run(ctx, textOf("body"))
		if err != nil {
			t.Fatal(err)
		}
		return res.Status, text
	}
	// count counts the elements selector matches whose text holds sub.
	count := func(t *testing.T, selector, sub string) int {
		t.Helper()
		ctx, cancel := step(bctx)
		defer cancel()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf("[...document.querySelectorAll(%q)].filter(e => e.textContent.includes(%q)).length", selector, sub)))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	shoot := func(t *testing.T, name string, shot chromedp.Action[[]byte]) {
		t.Helper()
		ctx, cancel := step(bctx)
		defer cancel()
		png, err := chromedp.Run(ctx, shot)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(shots, name)
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", path)
	}

	// support_desk's own inbox, as a person finds it after
	// `support_desk --approver person`: T3's and T4's refunds.
	pending, err := inspect.Approvals(ctx, s, namespace, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	byTrace := map[string]string{}
	for _, p := range pending {
		byTrace[p.TraceID] = p.ActionID
	}
	pay, refuse := byTrace["T3"], byTrace["T4"]
	if pay == "" || refuse == "" || len(pending) != 2 {
		t.Fatalf("support_desk's refunds do not wait: %+v", pending)
	}
	t.Run("support_desk's inbox", func(t *testing.T) {
		code, text := open(t, "/")
		if code != http.StatusOK {
			t.Fatalf("inbox: %d\n%s", code, text)
		}
		for action, want := range map[string][]string{
			pay:    {"issue_refund", `"order_id": "A3"`, `"amount": 750`, "wrong_item", "amount > 500", "refund_due", "percept.order", "waiting", "since", "no budget applies"},
			refuse: {"issue_refund", `"order_id": "A4"`, `"amount": 900`, "amount > 500", "refund_due", "percept.order"},
		} {
			ctx, cancel := step(bctx)
			item, err := chromedp.Run(ctx, textOf(article(action)))
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range want {
				if !strings.Contains(item, w) {
					t.Errorf("support_desk's pending refund %s lacks %q:\n%s", action, w, item)
				}
			}
		}
		shoot(t, "inbox.png", chromedp.FullScreenshot(100))
	})

	d := newDesk(t, s)
	approveMe := d.refund(t, "T5", "A5", "the parcel never arrived")
	denyMe := d.refund(t, "T6", "A6", "changed my mind")
	tamperMe := d.refund(t, "T7", "A7", "wrong size")
	hostileAct := d.refund(t, "T8", "A8", hostile)
	// A call of a tool nobody declared, by a hostile name: refused, and
	// its name stored in the decision record the timeline shows.
	if res, err := d.g.Call(ctx, toolgate.Call{Tool: hostile, Args: json.RawMessage(`{}`), Caller: "support", TraceID: "T8"}); err != nil || res.Outcome != audit.OutcomeRefused {
		t.Fatalf("hostile tool: %+v %v", res, err)
	}

	t.Run("inbox", func(t *testing.T) {
		code, text := open(t, "/")
		if code != http.StatusOK {
			t.Fatalf("inbox: %d\n%s", code, text)
		}
		for _, want := range []string{"namespace " + namespace, "namespace " + own, approveMe, denyMe, tamperMe, hostileAct, "signed in as human:alice"} {
			if !strings.Contains(text, want) {
				t.Errorf("inbox lacks %q", want)
			}
		}
		ctx, cancel := step(bctx)
		defer cancel()
		item, err := chromedp.Run(ctx, textOf(article(approveMe)))
		if err != nil {
			t.Fatal(err)
		}
		// The refund, its arguments as committed, why it waits, and the
		// belief and observation it rests on.
		// The budget its call was charged to: T5's refund is the run's
		// second call.
		for _, want := range []string{"issue_refund", `"order_id": "A5"`, `"amount": 700`, "the parcel never arrived", "sha256:", "amount > 500",
			"refund_due", "percept.order", "present,current,fresh", "approve", "deny",
			"budget spent", "run " + deskRun + ": tokens 0 of 100000, tool_calls 2 of 40"} {
			if !strings.Contains(item, want) {
				t.Errorf("the pending refund lacks %q:\n%s", want, item)
			}
		}
		shoot(t, "inbox-all.png", chromedp.CaptureScreenshot())
	})

	t.Run("markup shown inert", func(t *testing.T) {
		if code, text := open(t, "/"); code != http.StatusOK {
			t.Fatalf("inbox: %d\n%s", code, text)
		}
		ctx, cancel := step(bctx)
		defer cancel()
		item, err := chromedp.Run(ctx, textOf(article(hostileAct)))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(item, "<img src=x onerror=alert(1)><script>alert(2)</script>") || strings.Contains(item, "\x1b") {
			t.Errorf("the hostile reason is not shown as text, or its escape is raw:\n%q", item)
		}
		if n := count(t, "img, script, iframe, object, embed", ""); n != 0 {
			t.Errorf("the inbox holds %d elements a stored reason made", n)
		}
		// The timeline clips a refusal's detail, where the tool's name is:
		// its start is enough to show it inert.
		if code, text := open(t, "/trace?id=T8"); code != http.StatusOK {
			t.Fatalf("trace T8: %d\n%s", code, text)
		}
		if n := count(t, "pre", `"<img src=x`); n != 1 {
			t.Errorf("the timeline as text does not show the hostile tool name as text")
		}
		pic, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("svg.timeline").textContent`))
		if err != nil || !strings.Contains(pic, `"<img src=x`) {
			t.Errorf("the timeline picture does not show the hostile tool name inert: %v\n%q", err, pic)
		}
		if n := count(t, "img, script, iframe, object, embed", ""); n != 0 {
			t.Errorf("the trace page holds %d elements stored text made", n)
		}
	})

	t.Run("digest changed", func(t *testing.T) {
		stale := "sha256:" + strings.Repeat("0", 64)
		code, text := decide(t, tamperMe, "approve", chromedp.SetAttributeValue(chromedp.CSS(article(tamperMe)+` input[name="digest"]`), "value", stale))
		if code != http.StatusConflict || !strings.Contains(text, "not those the page showed") {
			t.Errorf("a changed digest: %d\n%s", code, text)
		}
		if n := d.approvals(t, "T7", tamperMe); n != 0 {
			t.Errorf("%d approvals recorded from a changed digest", n)
		}
	})

	t.Run("no CSRF token", func(t *testing.T) {
		code, text := decide(t, tamperMe, "approve", chromedp.SetAttributeValue(chromedp.CSS(article(tamperMe)+` input[name="csrf"]`), "value", ""))
		if code != http.StatusForbidden || !strings.Contains(text, "CSRF token") {
			t.Errorf("a form without its CSRF token: %d\n%s", code, text)
		}
		if n := d.approvals(t, "T7", tamperMe); n != 0 {
			t.Errorf("%d approvals recorded without a CSRF token", n)
		}
	})

	t.Run("no identity", func(t *testing.T) {
		// The page was loaded signed in; the decision is sent without.
		// The console answers 401 with a basic-auth challenge, which
		// headless Chromium turns into a failed load.
		code, text := decide(t, tamperMe, "approve", signIn(""))
		if code != http.StatusUnauthorized {
			t.Errorf("a decision without identity: %d\n%s", code, text)
		}
		if n := d.approvals(t, "T7", tamperMe); n != 0 {
			t.Errorf("%d approvals recorded without identity", n)
		}
		if code, text := open(t, "/"); code != http.StatusUnauthorized || strings.Contains(text, tamperMe) {
			t.Errorf("the inbox without identity: %d\n%s", code, text)
		}
		ctx, cancel := step(bctx)
		defer cancel()
		if err := chromedp.Do(ctx, signIn(aliceToken)); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("approve", func(t *testing.T) {
		code, text := decide(t, approveMe, "approve", chromedp.SetValue(chromedp.CSS(article(approveMe)+` input[name="note"]`), "checked the order"))
		if code != http.StatusOK || !strings.Contains(text, "approved") {
			t.Fatalf("approve: %d\n%s", code, text)
		}
		// The application's gate resumes the action, twice over: it pays once.
		for range 2 {
			if res, err := d.g.Execute(ctx, approveMe); err != nil || res.Outcome != audit.OutcomeExecuted {
				t.Fatal(res, err)
			}
		}
		d.mu.Lock()
		paid := d.ledger["T5"]
		d.mu.Unlock()
		if paid != 1 || d.results(t, "T5", approveMe) != 1 {
			t.Errorf("%d payments in the ledger and %d results in the effect log, want 1 and 1", paid, d.results(t, "T5", approveMe))
		}
		if _, text := open(t, "/"); strings.Contains(text, approveMe) {
			t.Error("the inbox still lists the paid refund")
		}
		code, text = open(t, "/trace?id=T5")
		if code != http.StatusOK || !strings.Contains(text, "approved by human:alice") {
			t.Errorf("trace T5: %d\n%s", code, text)
		}
		for sel, want := range map[string]int{`svg.timeline g.node[data-lane="attempt"]`: 1, `svg.timeline g.node[data-lane="result"]`: 1} {
			if n := count(t, sel, "effect.issue_refund"); n != want {
				t.Errorf("%d nodes %s, want %d", n, sel, want)
			}
		}
		shoot(t, "timeline-approved.png", chromedp.FullScreenshot(100))

		// The trace's effects, reached from the trace page: the lookup
		// and the refund, which has exactly one attempt, numbered 1 with
		// its lease, and its result.
		ctx, cancel := step(bctx)
		_, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`a[href="/effects?id=T5"]`)))
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		refund := article(approveMe)
		if n := count(t, refund+" tr.step.attempted", "attempted"); n != 1 {
			t.Errorf("%d refund attempts on the effects page, want 1", n)
		}
		if n := count(t, refund+" tr.step.succeeded", "EFFECT_SUCCEEDED"); n != 1 {
			t.Errorf("%d refund results on the effects page, want 1", n)
		}
		ctx, cancel = step(bctx)
		text, err = chromedp.Run(ctx, textOf(refund))
		cancel()
		if err != nil || !strings.Contains(text, "re_T5") || !strings.Contains(text, "1, the last record") {
			t.Errorf("the refund's effects: %v\n%s", err, text)
		}
		if n := count(t, "article.effect", ""); n != 2 {
			t.Errorf("%d effects of T5, want 2 (the lookup and the refund)", n)
		}
		shoot(t, "effects.png", chromedp.FullScreenshot(100))
	})

	t.Run("deny", func(t *testing.T) {
		code, text := decide(t, denyMe, "deny", chromedp.SetValue(chromedp.CSS(article(denyMe)+` input[name="note"]`), "the carrier has it signed for"))
		if code != http.StatusOK || !strings.Contains(text, "denied") {
			t.Fatalf("deny: %d\n%s", code, text)
		}
		res, err := d.g.Execute(ctx, denyMe)
		if err != nil || res.Code != reason.ApprovalDenied {
			t.Fatal(res, err)
		}
		d.mu.Lock()
		paid := d.ledger["T6"]
		d.mu.Unlock()
		if paid != 0 {
			t.Errorf("%d payments after a denial", paid)
		}
		code, text = open(t, "/trace?id=T6")
		if code != http.StatusOK || !strings.Contains(text, "denied by human:alice") || !strings.Contains(text, "queue_for_review") {
			t.Errorf("trace T6 does not show the denial and the review: %d\n%s", code, text)
		}
	})

	t.Run("support_desk's refunds", func(t *testing.T) {
		if code, text := open(t, "/"); code != http.StatusOK {
			t.Fatalf("inbox: %d\n%s", code, text)
		}
		ctx, cancel := step(bctx)
		item, err := chromedp.Run(ctx, textOf(article(pay)))
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		// The evidence in front of the person: the refund as committed,
		// why it waits, and the order looked up that grounds it.
		for _, want := range []string{"issue_refund", `"order_id": "A3"`, `"amount": 750`, "wrong_item", "amount > 500", "refund_due", "percept.order"} {
			if !strings.Contains(item, want) {
				t.Errorf("support_desk's pending refund lacks %q:\n%s", want, item)
			}
		}
		if code, text := decide(t, pay, "approve", chromedp.SetValue(chromedp.CSS(article(pay)+` input[name="note"]`), "grinder returned")); code != http.StatusOK || !strings.Contains(text, "approved") {
			t.Fatalf("approve %s: %d\n%s", pay, code, text)
		}
		if code, text := decide(t, refuse, "deny", chromedp.SetValue(chromedp.CSS(article(refuse)+` input[name="note"]`), "signed for")); code != http.StatusOK || !strings.Contains(text, "denied") {
			t.Fatalf("deny %s: %d\n%s", refuse, code, text)
		}
		out := fill(t, db)
		for _, want := range []string{"T3: a person decided what waited for approval", "T3 " + pay + " paid  750.00 on order A3",
			"1 payment under its key", "T4 " + refuse + " not run: APPROVAL_DENIED by human:alice, 0 payments", "approvals: 1 approved, 1 denied"} {
			if !strings.Contains(out, want) {
				t.Errorf("support_desk's second run lacks %q:\n%s", want, out)
			}
		}
		if code, text := open(t, "/trace?id=T3"); code != http.StatusOK || !strings.Contains(text, "approved by human:alice") {
			t.Errorf("trace T3: %d\n%s", code, text)
		}
	})

	t.Run("support_desk's timeline", func(t *testing.T) {
		// T4: a refund refused by its binding, then one denied and sent
		// to review.
		code, text := open(t, "/trace?id=T4")
		if code != http.StatusOK || !strings.Contains(text, "ARGUMENT_NOT_BOUND") {
			t.Fatalf("trace T4: %d\n%s", code, text)
		}
		if n := count(t, "svg.timeline g.node.refusal", "ARGUMENT_NOT_BOUND"); n == 0 {
			t.Error("no refusal drawn in T4's timeline")
		}
		shoot(t, "timeline-T4.png", chromedp.FullScreenshot(100))
	})

	if n := dialogs.Load(); n != 0 {
		t.Errorf("%d script dialogs opened: stored text ran", n)
	}
}

// refused reports whether a load failed because the server asked for
// credentials the browser did not have: headless Chromium's answer to a
// 401 with a challenge.
func refused(err error) bool {
	return err != nil && strings.Contains(err.Error(), "ERR_INVALID_AUTH_CREDENTIALS")
}

// textOf reads the rendered text of the first element selector matches
// by script, as the DevTools protocol runs it (a page's content security
// policy does not apply): a read by the DOM domain's node ids can race
// with the page's load.
func textOf(selector string) chromedp.Action[string] {
	return chromedp.Evaluate[string](fmt.Sprintf("document.querySelector(%q).innerText", selector))
}

// article selects the inbox entry of action.
func article(action string) string { return `article[id="` + action + `"]` }
