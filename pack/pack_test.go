package pack_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/budget"
	"github.com/blackboardkernel/bk/canon"
	"github.com/blackboardkernel/bk/failure"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/pack"
	"github.com/blackboardkernel/bk/toolgate"
)

// clock is a settable test clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

var t0 = time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)

// desk is a kernel holding one trace with two committed beliefs: one on
// an order observed with a one-hour TTL, one on a customer record its
// sources disagree on (arbitrated by confidence 0.9).
func desk(t testing.TB, clk *clock) *kernel.Kernel {
	t.Helper()
	ctx := context.Background()
	k, err := kernel.New(kernel.Config{Clock: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	tool, planner := k.Handle(blackboard.RoleTool, "orders"), k.Proposer(blackboard.RolePlanner, "planner")
	if _, err := tool.Write(ctx, kernel.Entry{TraceID: "t1", Slot: blackboard.Percepts, Kind: "order",
		Payload: blackboard.Payload{"order_id": "A-17", "amount": 40}, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	clk.t = clk.t.Add(time.Minute)
	if _, err := tool.Write(ctx, kernel.Entry{TraceID: "t1", Slot: blackboard.Percepts, Kind: "customer",
		Payload: blackboard.Payload{"tier": "gold", "conflict": true}, Confidence: new(0.9)}); err != nil {
		t.Fatal(err)
	}
	for _, b := range []struct{ kind, on string }{{"refund_eligible", "order"}, {"vip", "customer"}} {
		clk.t = clk.t.Add(time.Minute)
		d, err := planner.Submit(ctx, kernel.Entry{TraceID: "t1", Slot: blackboard.Beliefs, Kind: b.kind,
			Payload: blackboard.Payload{"value": true, "depends_on": []string{b.on}}})
		if err != nil || !d.Committed() {
			t.Fatalf("belief %s: %v %v", b.kind, d.Code, err)
		}
	}
	return k
}

func run() pack.Run {
	return pack.Run{ID: "run-1", TraceID: "t1", Session: "s1", Role: "support", Intent: "refund"}
}

func input() pack.Input {
	return pack.Input{
		Mission:     "Resolve the customer's refund request for order A-17.",
		Constraints: []string{"Never refund more than the order amount.", "Refunds over 100 need an approval."},
		Signals:     []string{"The payments service is degraded."},
		Progress: []pack.Step{
			{Turn: 1, Tool: "lookup_order", OK: true, Note: "order A-17 found, 40 EUR"},
			{Turn: 2, Tool: "lookup_customer", OK: true, Note: "gold tier"},
		},
		Task:       "Decide whether to refund order A-17 and call the tool.",
		LastResult: `{"customer":"gold","since":"2019"}`,
		Tools: []toolgate.Spec{
			{Name: "refund", Description: "Refund an order.", Parameters: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"}}}`)},
			{Name: "wipe_account", Description: "Delete an account."},
		},
		Policy: pack.PolicySummary{Hash: "sha256:abc", Rules: []string{"refund only eligible orders"},
			Approval: []string{"refund"}, Prohibited: []string{"wipe_account"}, MustEscalate: []string{"chargebacks"}},
	}
}

func compiler(t testing.TB, clk *clock, opts ...pack.Option) *pack.Compiler {
	t.Helper()
	c, err := pack.New(append([]pack.Option{pack.WithClock(clk.now)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Known counts, from OpenAI's tiktoken for these encodings.
func TestCount(t *testing.T) {
	cases := []struct {
		text          string
		cl100k, o200k int
	}{
		{"hello world", 2, 2},
		{"hello  world", 3, 3},
		{"tiktoken is great!", 6, 6},
		{"supercalifragilistic", 7, 6},
		{"We know what we are, but know not what we may be.", 14, 14},
		{"", 0, 0},
	}
	for _, enc := range []string{pack.EncodingCL100K, pack.EncodingO200K} {
		c, err := pack.New(pack.WithEncoding(enc))
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range cases {
			want := tc.cl100k
			if enc == pack.EncodingO200K {
				want = tc.o200k
			}
			for range 2 { // the second count comes from the cache
				if n, err := c.Count(tc.text); err != nil || n != want {
					t.Errorf("%s: Count(%q) = %d, %v; want %d", enc, tc.text, n, err, want)
				}
			}
		}
	}
}

// The prompt's token count is the tokenizer's count of the whole prompt,
// not an estimate summed from parts.
func TestTokensAreTheWholePromptsCount(t *testing.T) {
	for _, enc := range []string{pack.EncodingCL100K, pack.EncodingO200K} {
		clk := &clock{t0}
		k := desk(t, clk)
		c := compiler(t, clk, pack.WithEncoding(enc))
		in := input()
		in.LastResult = "line one.\n\n  line two, indented:\n\t{\"a\": 1}\n\n"
		p, err := c.Compile(context.Background(), k.Reader(), run(), in)
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := pack.New(pack.WithEncoding(enc))
		if err != nil {
			t.Fatal(err)
		}
		whole, err := fresh.Count(p.Prompt)
		if err != nil {
			t.Fatal(err)
		}
		if p.Tokens != whole {
			t.Errorf("%s: Tokens = %d, the prompt counts %d", enc, p.Tokens, whole)
		}
		sum := 0
		for _, s := range p.Sections() {
			sum += s.Tokens
		}
		if sum != p.Tokens {
			t.Errorf("%s: sections sum to %d, Tokens = %d", enc, sum, p.Tokens)
		}
	}
}

func TestNewErrors(t *testing.T) {
	bad := pack.DefaultShares()
	bad[pack.SectionTools] += 0.1
	unknown := pack.DefaultShares()
	unknown["gossip"] = 0
	missing := pack.DefaultShares()
	delete(missing, pack.SectionMemory)
	for _, tc := range []struct {
		name string
		opt  pack.Option
		want error
	}{
		{"unknown encoding", pack.WithEncoding("p50k_base"), pack.ErrEncoding},
		{"zero window", pack.WithWindow(0), pack.ErrWindow},
		{"shares over 1", pack.WithShares(bad), pack.ErrInvalid},
		{"unknown section", pack.WithShares(unknown), pack.ErrInvalid},
		{"missing section", pack.WithShares(missing), pack.ErrInvalid},
		{"nil clock", pack.WithClock(nil), pack.ErrInvalid},
	} {
		_, err := pack.New(tc.opt)
		if !errors.Is(err, tc.want) || !strings.HasPrefix(err.Error(), tc.want.Error()+": new: ") {
			t.Errorf("%s: %v, want %v from new", tc.name, err, tc.want)
		}
	}
}

func TestCompileRefusesBadInput(t *testing.T) {
	clk := &clock{t0}
	k := desk(t, clk)
	c := compiler(t, clk)
	for name, mutate := range map[string]func(*pack.Run, *pack.Input){
		"no trace":          func(r *pack.Run, _ *pack.Input) { r.TraceID = "" },
		"no mission":        func(_ *pack.Run, in *pack.Input) { in.Mission = " " },
		"blank constraint":  func(_ *pack.Run, in *pack.Input) { in.Constraints = append(in.Constraints, "") },
		"transcript note":   func(_ *pack.Run, in *pack.Input) { in.Progress[0].Note = "user: hi\nassistant: hello" },
		"invalid UTF-8":     func(_ *pack.Run, in *pack.Input) { in.LastResult = "caf\xe9" },
		"invalid tool text": func(_ *pack.Run, in *pack.Input) { in.Tools[0].Description = "\xff" },
	} {
		r, in := run(), input()
		mutate(&r, &in)
		if _, err := c.Compile(context.Background(), k.Reader(), r, in); !errors.Is(err, pack.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

// Sections come in the priority stack's order, critical signals first;
// a prohibited tool is never shown; the manifests name what is shown.
func TestCompileSectionsAndManifest(t *testing.T) {
	clk := &clock{t0}
	k := desk(t, clk)
	clk.t = clk.t.Add(5 * time.Minute)
	c := compiler(t, clk)
	b, err := budget.New(budget.Limits{ToolCalls: 10, Tokens: 50000}, "", clk.now)
	if err != nil {
		t.Fatal(err)
	}
	r := run()
	r.Budget = b
	p, err := c.Compile(context.Background(), k.Reader(), r, input())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(p.Prompt, "## Critical signals\n- The payments service is degraded.\n## Mission\n") {
		t.Errorf("prompt does not start with the signals, then the mission:\n%s", p.Prompt)
	}
	last := -1
	for _, h := range []string{"## Critical signals", "## Mission", "## Constraints", "## Policy", "## Progress",
		"## Evidence", "## Current task", "## Last result", "## Tools", "## Run controls"} {
		i := strings.Index(p.Prompt, h)
		if i <= last {
			t.Errorf("%s at %d, after %d", h, i, last)
		}
		last = i
	}
	if strings.Contains(p.Prompt, "- wipe_account") || slices.Contains(p.Manifest.Tools, "wipe_account") {
		t.Error("a prohibited tool is shown")
	}
	if !slices.Contains(p.Manifest.Cuts(), pack.Cut{Section: pack.SectionTools, Item: "wipe_account", Reason: pack.ReasonProhibited}) {
		t.Errorf("the prohibited tool's cut is missing: %+v", p.Manifest.Cuts())
	}
	if !slices.Equal(p.Manifest.Tools, []string{"refund"}) {
		t.Errorf("tools manifest %v", p.Manifest.Tools)
	}
	var ids []string
	for _, e := range p.Manifest.Evidence() {
		ids = append(ids, e.ID)
	}
	want := []string{"beliefs:t1:8", "percepts:t1:2", "beliefs:t1:5", "percepts:t1:1"}
	if !slices.Equal(ids, want) {
		t.Errorf("evidence %v, want %v (newest belief first, each with its percepts)", ids, want)
	}
	if e := p.Manifest.Evidence()[3]; e.Kind != "order" || e.AgeMS != (8*time.Minute).Milliseconds() || e.TTLMS != time.Hour.Milliseconds() ||
		e.Freshness != pack.Fresh || len(e.Flags) != 0 || e.Belief != "beliefs:t1:5" {
		t.Errorf("order percept entry %+v", e)
	}
	if got := p.Manifest.Controls(); got.Mode != "normal" || !slices.Equal(got.Approval, []string{"refund"}) ||
		!slices.Contains(got.Budgets, pack.Left{Resource: string(budget.ToolCalls), Left: 10}) {
		t.Errorf("controls %+v", got)
	}
	if !strings.Contains(p.Prompt, "- budget left: ") || !strings.Contains(p.Prompt, "tool_calls 10") {
		t.Errorf("the budget left is not shown:\n%s", p.Prompt)
	}
	checkHash(t, p)
	if len(p.Manifest.Cuts()) != 1 || p.Tokens > p.Window {
		t.Errorf("cuts %+v in a context of %d tokens", p.Manifest.Cuts(), p.Tokens)
	}
	ro := run()
	ro.ReadOnly = true
	if p, err = c.Compile(context.Background(), k.Reader(), ro, input()); err != nil || !strings.Contains(p.Prompt, "safety mode: read_only") ||
		p.Mode != "read_only" || p.Manifest.Controls().Mode != "read_only" {
		t.Errorf("read_only run: %v %q", err, p.Mode)
	}
}

// A stale observation and a conflicted one are shown flagged, never as a
// current fact, and the beliefs resting on them carry their flags.
func TestAttackStaleOrConflictedShownAsCurrent(t *testing.T) {
	clk := &clock{t0}
	k := desk(t, clk)
	clk.t = clk.t.Add(3 * time.Hour) // past the order's one-hour TTL
	p, err := compiler(t, clk).Compile(context.Background(), k.Reader(), run(), input())
	if err != nil {
		t.Fatal(err)
	}
	flags := map[string][]string{}
	for _, e := range p.Manifest.Evidence() {
		flags[e.ID] = e.Flags
		if slices.Contains(e.Flags, pack.FlagStale) != (e.Freshness == pack.Stale) {
			t.Errorf("%s flagged %v but %s", e.ID, e.Flags, e.Freshness)
		}
	}
	for id, want := range map[string][]string{
		"percepts:t1:1": {pack.FlagStale}, "beliefs:t1:5": {pack.FlagStale},
		"percepts:t1:2": {pack.FlagConflicted}, "beliefs:t1:8": {pack.FlagConflicted},
	} {
		if !slices.Equal(flags[id], want) {
			t.Errorf("%s flags %v, want %v", id, flags[id], want)
		}
	}
	for _, line := range strings.Split(p.Prompt, "\n") {
		if strings.Contains(line, "percepts:t1:") || strings.Contains(line, "beliefs:t1:") {
			if !strings.HasSuffix(line, "not a current fact") {
				t.Errorf("shown as current: %q", line)
			}
		}
	}
	if !strings.Contains(p.Prompt, "- STALE: percept order = ") || !strings.Contains(p.Prompt, "observed 3 h ago") ||
		!strings.Contains(p.Prompt, "- CONFLICTED: percept customer = ") {
		t.Errorf("flags not shown:\n%s", p.Prompt)
	}
}

// A newer observation of the same kind supersedes the one a belief rests
// on: the old one is flagged superseded.
func TestAttackSupersededShownAsCurrent(t *testing.T) {
	clk := &clock{t0}
	k := desk(t, clk)
	if _, err := k.Handle(blackboard.RoleTool, "orders").Write(context.Background(), kernel.Entry{TraceID: "t1", Slot: blackboard.Percepts, Kind: "order",
		Payload: blackboard.Payload{"order_id": "A-17", "amount": 400}}); err != nil {
		t.Fatal(err)
	}
	p, err := compiler(t, clk).Compile(context.Background(), k.Reader(), run(), input())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range p.Manifest.Evidence() {
		if e.ID == "percepts:t1:1" && !slices.Equal(e.Flags, []string{pack.FlagSuperseded}) {
			t.Errorf("superseded percept flags %v", e.Flags)
		}
	}
	if !strings.Contains(p.Prompt, "- SUPERSEDED: percept order") {
		t.Errorf("not shown superseded:\n%s", p.Prompt)
	}
}

// Persistent records are recalled as memory; episode records of other
// traces are not.
func TestMemoryIsPersistentOnly(t *testing.T) {
	clk := &clock{t0}
	k := desk(t, clk)
	ctx := context.Background()
	id, _, err := k.Symbolic("learner").CommitConstraintOnce(ctx, "t0", kernel.Constraint{Name: "no_refund_on_fraud", BlocksField: "fraud"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Handle(blackboard.RoleTool, "orders").Write(ctx, kernel.Entry{TraceID: "t9", Slot: blackboard.Percepts, Kind: "secret",
		Payload: blackboard.Payload{"x": "other trace"}}); err != nil {
		t.Fatal(err)
	}
	p, err := compiler(t, clk).Compile(ctx, k.Reader(), run(), input())
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Manifest.Memory()) != 1 || p.Manifest.Memory()[0].ID != id || p.Manifest.Memory()[0].Slot != "constraints" {
		t.Errorf("memory %+v, want %s", p.Manifest.Memory(), id)
	}
	checkHash(t, p)
	if strings.Contains(p.Prompt, "other trace") {
		t.Error("an episode record of another trace is shown")
	}
}

// promptItems lists the item keys a test can see in the prompt.
func cutItems(p *pack.Pack, section, reason string) []string {
	var out []string
	for _, c := range p.Manifest.Cuts() {
		if c.Section == section && c.Reason == reason {
			out = append(out, c.Item)
		}
	}
	return out
}

// Under a tight window the oldest progress goes first, every cut is in
// the manifest with its tokens, the mission and constraints stay whole,
// and what is shown plus what is cut is everything.
func TestTruncationByPriority(t *testing.T) {
	clk := &clock{t0}
	k := desk(t, clk)
	in := input()
	in.Progress = nil
	for i := 1; i <= 40; i++ {
		in.Progress = append(in.Progress, pack.Step{Turn: i, Tool: "search", OK: i%5 != 0, Note: fmt.Sprintf("page %d read: nothing on order A-17 in this batch of tickets", i)})
	}
	c := compiler(t, clk, pack.WithWindow(1200))
	p, err := c.Compile(context.Background(), k.Reader(), run(), in)
	if err != nil {
		t.Fatal(err)
	}
	if p.Tokens > 1200 {
		t.Fatalf("%d tokens in a 1200-token window", p.Tokens)
	}
	checkHash(t, p)
	cut := cutItems(p, pack.SectionProgress, pack.ReasonBudget)
	if len(cut) == 0 {
		t.Fatalf("no progress cut: %+v", p.Manifest.Cuts())
	}
	for i, item := range cut { // the oldest first
		if want := fmt.Sprintf("turn %d", i+1); item != want {
			t.Errorf("cut %d is %s, want %s", i, item, want)
		}
	}
	// What the budget kept then went above 90 %% of the window: it was
	// compressed. Every turn is shown or in the manifest, never both.
	compressed := cutItems(p, pack.SectionProgress, "compressed")
	for i := 1; i <= 40; i++ {
		shown := strings.Contains(p.Prompt, fmt.Sprintf("- turn %d: ", i))
		isCut := slices.Contains(cut, fmt.Sprintf("turn %d", i)) || slices.Contains(compressed, fmt.Sprintf("turn %d", i))
		if shown == isCut {
			t.Errorf("turn %d: shown %v, cut %v", i, shown, isCut)
		}
	}
	if len(compressed) > 0 && !strings.Contains(p.Prompt, fmt.Sprintf("- turn %d to turn 40 (compressed): ", len(cut)+1)) {
		t.Errorf("no summary of turns %d to 40:\n%s", len(cut)+1, p.Prompt)
	}
	for _, c := range p.Manifest.Cuts() {
		if c.Tokens <= 0 && c.Reason == pack.ReasonBudget {
			t.Errorf("cut without tokens: %+v", c)
		}
	}
	if !strings.Contains(p.Prompt, in.Mission) || !strings.Contains(p.Prompt, in.Constraints[1]) {
		t.Error("the mission or a constraint was cut")
	}
	for _, s := range p.Sections() {
		if s.Tokens > s.Budget && s.Name != pack.SectionMission && s.Name != pack.SectionConstraints {
			t.Errorf("section %s takes %d tokens over its budget %d", s.Name, s.Tokens, s.Budget)
		}
	}
}

// A section's unused share flows on: a long tool list, far over its own
// 10 %, fits whole when the sections before it leave room.
func TestUnusedShareFlows(t *testing.T) {
	clk := &clock{t0}
	k := desk(t, clk)
	in := pack.Input{Mission: "Answer the question."}
	for i := range 30 {
		in.Tools = append(in.Tools, toolgate.Spec{Name: fmt.Sprintf("tool_%02d", i), Description: "Looks up one kind of record in the customer database and returns it."})
	}
	p, err := compiler(t, clk, pack.WithWindow(2000)).Compile(context.Background(), k.Reader(), run(), in)
	if err != nil {
		t.Fatal(err)
	}
	var tools pack.Section
	for _, s := range p.Sections() {
		if s.Name == pack.SectionTools {
			tools = s
		}
	}
	if len(p.Manifest.Tools) != 30 || tools.Tokens <= 200 || len(p.Manifest.Cuts()) != 0 {
		t.Errorf("tools %d shown in %d tokens (budget %d); cuts %+v", len(p.Manifest.Tools), tools.Tokens, tools.Budget, p.Manifest.Cuts())
	}
}

// The mission and constraints are never cut: a window that cannot hold
// them is an error, and one that just holds them cuts everything else.
func TestMissionNeverCut(t *testing.T) {
	clk := &clock{t0}
	k := desk(t, clk)
	in := input()
	c := compiler(t, clk)
	head, err := c.Count("## Mission\n" + in.Mission + "\n## Constraints\n- " + in.Constraints[0] + "\n- " + in.Constraints[1] + "\n")
	if err != nil {
		t.Fatal(err)
	}
	_, err = compiler(t, clk, pack.WithWindow(head-1)).Compile(context.Background(), k.Reader(), run(), in)
	if !errors.Is(err, pack.ErrWindow) || !strings.Contains(err.Error(), "compile: section mission") {
		t.Fatalf("window of %d for %d fixed tokens: %v", head-1, head, err)
	}
	// The fixed part must also be under the 90 % mark: in a window it
	// fills, nothing can be evicted to bring it under.
	if _, err := compiler(t, clk, pack.WithWindow(head+1)).Compile(context.Background(), k.Reader(), run(), in); !errors.Is(err, pack.ErrWindow) {
		t.Errorf("mission and constraints above 90 %% of the window: %v, want ErrWindow", err)
	}
	w := head*10/9 + 2
	p, err := compiler(t, clk, pack.WithWindow(w)).Compile(context.Background(), k.Reader(), run(), in)
	if err != nil {
		t.Fatal(err)
	}
	if p.Tokens != head || !strings.Contains(p.Prompt, in.Mission) {
		t.Errorf("%d tokens for %d fixed:\n%s", p.Tokens, head, p.Prompt)
	}
}

// Above 90 % of the window the progress is compressed to one line, then
// items are evicted; both are in the manifest.
func TestAbove90PercentCompressesThenEvicts(t *testing.T) {
	clk := &clock{t0}
	k := desk(t, clk)
	in := input()
	for i := 3; i <= 30; i++ {
		in.Progress = append(in.Progress, pack.Step{Turn: i, Tool: "search", OK: true, Note: "nothing new"})
	}
	in.LastResult = strings.Repeat("The ticket history shows no earlier refund for this order. ", 80)
	c := compiler(t, clk, pack.WithWindow(1500))
	p, err := c.Compile(context.Background(), k.Reader(), run(), in)
	if err != nil {
		t.Fatal(err)
	}
	if p.Tokens > 1350 {
		t.Errorf("%d tokens, above 90 %% of 1500", p.Tokens)
	}
	compressed := cutItems(p, pack.SectionProgress, "compressed")
	if len(compressed) < 2 || !strings.Contains(p.Prompt, "(compressed): ") {
		t.Errorf("progress not compressed: %v\n%s", compressed, p.Prompt)
	}
	for i := 1; i <= 30; i++ {
		if strings.Contains(p.Prompt, fmt.Sprintf("- turn %d: ", i)) {
			t.Errorf("turn %d still shown after compression", i)
		}
	}
	if len(p.Manifest.Cuts()) == len(compressed) {
		t.Log("compression alone was enough")
	}
	// Without the 90 % rule the same input fills more of the window.
	wide, err := compiler(t, clk, pack.WithWindow(100000)).Compile(context.Background(), k.Reader(), run(), in)
	if err != nil {
		t.Fatal(err)
	}
	if wide.Tokens <= 1350 {
		t.Fatalf("the input takes %d tokens: the test shows nothing", wide.Tokens)
	}
}

// Something must be evicted once compression is not enough.
func TestAbove90PercentEvicts(t *testing.T) {
	clk := &clock{t0}
	k := desk(t, clk)
	in := input()
	in.Task = strings.Repeat("Check every line of the order. ", 40)
	in.LastResult = strings.Repeat("No refund was made for this order before. ", 30)
	c := compiler(t, clk, pack.WithWindow(700))
	p, err := c.Compile(context.Background(), k.Reader(), run(), in)
	if err != nil {
		t.Fatal(err)
	}
	if p.Tokens > 630 {
		t.Errorf("%d tokens above 90 %% of 700", p.Tokens)
	}
	var evicted int
	for _, cut := range p.Manifest.Cuts() {
		if cut.Reason == "evicted" {
			evicted++
			if strings.Contains(p.Prompt, cut.Item+";") {
				t.Errorf("evicted %s still shown", cut.Item)
			}
		}
	}
	if evicted == 0 {
		t.Errorf("nothing evicted: %+v", p.Manifest.Cuts())
	}
}

// Same inputs and clock, same hash, from any compiler; a changed input or
// clock changes it. The hash is the digest of the rest of the record.
func TestDeterministic(t *testing.T) {
	clk := &clock{t0}
	k := desk(t, clk)
	ctx := context.Background()
	a, err := compiler(t, clk).Compile(ctx, k.Reader(), run(), input())
	if err != nil {
		t.Fatal(err)
	}
	b, err := compiler(t, clk).Compile(ctx, k.Reader(), run(), input())
	if err != nil {
		t.Fatal(err)
	}
	if a.Hash != b.Hash || !strings.HasPrefix(a.Hash, "sha256:") || len(a.Hash) != 71 {
		t.Errorf("hashes %s, %s", a.Hash, b.Hash)
	}
	in := input()
	in.LastResult = `{"customer":"gold","since":"2018"}`
	c, err := compiler(t, clk).Compile(ctx, k.Reader(), run(), in)
	if err != nil || c.Hash == a.Hash {
		t.Errorf("a changed last result kept the hash: %v", err)
	}
	clk.t = clk.t.Add(time.Minute)
	d, err := compiler(t, clk).Compile(ctx, k.Reader(), run(), input())
	if err != nil || d.Hash == a.Hash {
		t.Errorf("a later clock kept the hash: %v", err)
	}
	checkHash(t, a)
}

// checkHash checks that p's hash is the digest of the rest of its JSON:
// what the record holds.
func checkHash(t *testing.T, p *pack.Pack) {
	t.Helper()
	m, err := pack.Payload(p)
	if err != nil {
		t.Fatal(err)
	}
	delete(m, "hash")
	if h, err := canon.Digest(m); err != nil || h != p.Hash {
		t.Errorf("hash %s is not the digest of the rest (%s, %v)", p.Hash, h, err)
	}
}

// A sub-agent's context for step 3 holds its task and one line per
// earlier step, never the earlier steps' raw outputs.
func TestCleanContextPerStep(t *testing.T) {
	clk := &clock{t0}
	k := desk(t, clk)
	raw := []string{
		"assistant: I will look up the order. <tool_call>lookup_order{\"id\":\"A-17\"}</tool_call> RAW-OUTPUT-STEP-1 amount=40 currency=EUR status=delivered",
		"assistant: Now the customer. RAW-OUTPUT-STEP-2 {\"tier\":\"gold\",\"notes\":\"called twice about shipping\"}",
	}
	// The loop keeps its own transcript; the step's input is built from
	// the steps' one-line notes and the step's task only.
	steps := []pack.Step{
		{Turn: 1, Tool: "lookup_order", OK: true, Note: "order A-17: 40 EUR, delivered"},
		{Turn: 2, Tool: "lookup_customer", OK: true, Note: "customer is gold tier"},
	}
	in := input()
	in.Progress, in.LastResult = steps, ""
	in.Task = "Step 3: decide the refund."
	p, err := compiler(t, clk).Compile(context.Background(), k.Reader(), run(), in)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range raw {
		for _, frag := range []string{"RAW-OUTPUT-STEP", "assistant:", "<tool_call>", "called twice"} {
			if strings.Contains(r, frag) && strings.Contains(p.Prompt, frag) {
				t.Errorf("step 3's context holds %q of an earlier step's raw output", frag)
			}
		}
	}
	if !strings.Contains(p.Prompt, "- turn 1: lookup_order ok: order A-17: 40 EUR, delivered\n- turn 2: lookup_customer ok: customer is gold tier\n") {
		t.Errorf("progress not shown as one line per step:\n%s", p.Prompt)
	}
	in.Progress[1].Note = raw[1] + "\n" + raw[0]
	if _, err := compiler(t, clk).Compile(context.Background(), k.Reader(), run(), in); !errors.Is(err, pack.ErrInvalid) {
		t.Errorf("a transcript as progress: %v, want ErrInvalid", err)
	}
}

// Record writes the pack as a compiled_context evidence record with the
// kernel's role, whose payload holds the hash and refs the records shown.
func TestRecord(t *testing.T) {
	clk := &clock{t0}
	k := desk(t, clk)
	ctx := context.Background()
	p, err := compiler(t, clk).Compile(ctx, k.Reader(), run(), input())
	if err != nil {
		t.Fatal(err)
	}
	id, err := p.Record(ctx, k.Governor())
	if err != nil {
		t.Fatal(err)
	}
	rec, err := k.Reader().Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Slot != blackboard.Evidence || rec.Kind != audit.KindCompiledContext || rec.Provenance.Role != blackboard.RoleKernel || rec.Provenance.TraceID != "t1" {
		t.Errorf("record %s %s %s %s", rec.Slot, rec.Kind, rec.Provenance.Role, rec.Provenance.TraceID)
	}
	if rec.Payload["hash"] != p.Hash || rec.Payload["prompt"] != p.Prompt || rec.Payload["policy"] != "sha256:abc" ||
		rec.Payload["encoding"] != pack.EncodingCL100K || rec.Payload["mode"] != "normal" {
		t.Errorf("payload %v", rec.Payload)
	}
	man, _ := rec.Payload["manifest"].(map[string]any)
	for _, key := range []string{"policy", "tools", "evidence", "memory", "controls", "cuts"} {
		if _, ok := man[key]; !ok {
			t.Errorf("manifest has no %s", key)
		}
	}
	if !slices.Contains(rec.Provenance.InputRefs, "percepts:t1:1") || !slices.Contains(rec.Provenance.InputRefs, "beliefs:t1:8") {
		t.Errorf("input refs %v", rec.Provenance.InputRefs)
	}
	var zero pack.Pack
	if _, err := zero.Record(ctx, k.Governor()); !errors.Is(err, pack.ErrInvalid) {
		t.Errorf("recording a pack not compiled: %v", err)
	}
}

// What the later sections leave unused goes back to an earlier one that
// was over its share: a context that fits the window loses nothing.
func TestUnusedShareGoesBack(t *testing.T) {
	clk := &clock{t0}
	k, err := kernel.New(kernel.Config{Clock: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	in := pack.Input{Mission: "Answer the question."}
	for i := 1; i <= 40; i++ {
		in.Progress = append(in.Progress, pack.Step{Turn: i, Tool: "search", OK: true, Note: "read one more page of the ticket history"})
	}
	c := compiler(t, clk, pack.WithWindow(1000))
	p, err := c.Compile(context.Background(), k.Reader(), run(), in)
	if err != nil {
		t.Fatal(err)
	}
	var progress pack.Section
	for _, s := range p.Sections() {
		if s.Name == pack.SectionProgress {
			progress = s
		}
	}
	// More than the 42 % the shares up to the progress give it.
	if progress.Tokens <= 420 || len(p.Manifest.Cuts()) != 0 || p.Tokens > 900 {
		t.Errorf("progress %d tokens (budget %d), %d in all; cuts %+v", progress.Tokens, progress.Budget, p.Tokens, p.Manifest.Cuts())
	}
}

// Steps compresses a grant's trajectory: a failed turn's note is its
// execution status and failure category, never the error's text.
func TestStepsFromTrajectory(t *testing.T) {
	g := failure.NewGrant(5)
	g.Turn("lookup_order", nil)
	g.Turn("refund", errors.New("upstream said: card 4111-1111 declined at 10:32"))
	steps := pack.Steps(g.Trajectory())
	if len(steps) != 2 || !steps[0].OK || steps[0].Tool != "lookup_order" || steps[0].Note != "" || steps[1].OK || steps[1].Turn != 2 {
		t.Fatalf("steps %+v", steps)
	}
	tr := g.Trajectory()[1]
	if want := string(tr.Status) + " (" + string(tr.Category) + ")"; steps[1].Note != want || strings.Contains(steps[1].Note, "4111") {
		t.Errorf("note %q, want %q", steps[1].Note, want)
	}
}

// A compiler is shared by concurrent compiles (run with -race).
func TestCompileConcurrent(t *testing.T) {
	clk := &clock{t0}
	k := desk(t, clk)
	c := compiler(t, clk)
	want, err := c.Compile(context.Background(), k.Reader(), run(), input())
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	for i := range 8 {
		go func() {
			in := input()
			if i%2 == 1 {
				in.Task = fmt.Sprintf("task %d", i)
			}
			p, err := c.Compile(context.Background(), k.Reader(), run(), in)
			if err == nil && i%2 == 0 && p.Hash != want.Hash {
				err = fmt.Errorf("compile %d: hash %s, want %s", i, p.Hash, want.Hash)
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// A caller that passes a prohibited tool (a stale surface, a bug) does not
// get it in front of the model: the compiler leaves it out and says so.
func TestAttackProhibitedToolShown(t *testing.T) {
	clk := &clock{t0}
	k := desk(t, clk)
	in := input()
	in.Tools = append(in.Tools, toolgate.Spec{Name: "transfer_funds", Description: "Move money between accounts."})
	in.Policy.Prohibited = []string{"transfer_funds", "wipe_account"}
	p, err := compiler(t, clk).Compile(context.Background(), k.Reader(), run(), in)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range in.Policy.Prohibited {
		if strings.Contains(p.Prompt, "- "+name+":") || strings.Contains(p.Prompt, "- "+name+"\n") || slices.Contains(p.Manifest.Tools, name) {
			t.Errorf("prohibited tool %s shown", name)
		}
		if !slices.Contains(p.Manifest.Cuts(), pack.Cut{Section: pack.SectionTools, Item: name, Reason: pack.ReasonProhibited}) {
			t.Errorf("prohibited tool %s not in the cuts", name)
		}
	}
}

// Evidence is cut least recent first: every belief cut is older than
// every belief shown, and each is in the manifest once.
func TestEvidenceCutLeastRecentFirst(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t0}
	k, err := kernel.New(kernel.Config{Clock: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	tool, planner := k.Handle(blackboard.RoleTool, "crm"), k.Proposer(blackboard.RolePlanner, "planner")
	stamp := map[string]int{}
	for i := range 12 {
		clk.t = clk.t.Add(time.Minute)
		kind := fmt.Sprintf("fact_%02d", i)
		if _, err := tool.Write(ctx, kernel.Entry{TraceID: "t1", Slot: blackboard.Percepts, Kind: kind,
			Payload: blackboard.Payload{"detail": "the customer confirmed this on the phone"}}); err != nil {
			t.Fatal(err)
		}
		d, err := planner.Submit(ctx, kernel.Entry{TraceID: "t1", Slot: blackboard.Beliefs, Kind: "holds_" + kind,
			Payload: blackboard.Payload{"value": true, "depends_on": []string{kind}}})
		if err != nil || !d.Committed() {
			t.Fatal(d.Code, err)
		}
		stamp[d.CommittedID] = i
	}
	p, err := compiler(t, clk, pack.WithWindow(500)).Compile(ctx, k.Reader(), run(), pack.Input{Mission: "Answer the question."})
	if err != nil {
		t.Fatal(err)
	}
	oldestShown, newestCut := 99, -1
	seen := map[string]bool{}
	for _, e := range p.Manifest.Evidence() {
		if e.Slot == "beliefs" {
			oldestShown = min(oldestShown, stamp[e.ID])
			seen[e.ID] = true
		}
	}
	var cuts int
	for _, c := range p.Manifest.Cuts() {
		if c.Section != pack.SectionEvidence {
			continue
		}
		cuts++
		if seen[c.Item] {
			t.Errorf("%s both shown and cut", c.Item)
		}
		seen[c.Item] = true
		newestCut = max(newestCut, stamp[c.Item])
	}
	if cuts == 0 || oldestShown == 99 || len(seen) != 12 {
		t.Fatalf("%d cuts, %d beliefs accounted for: %+v", cuts, len(seen), p.Manifest.Cuts())
	}
	if newestCut >= oldestShown {
		t.Errorf("belief %d cut while the older %d is shown", newestCut, oldestShown)
	}
}
