package console

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/inspect"
	"github.com/blackboardkernel/bk/internal/snapshot"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/rules"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/toolgate"
)

// ErrInvalidConfig is a console that cannot be built as asked: no
// identity, a bad token file, a bad TTL.
var ErrInvalidConfig = errors.New("console: invalid configuration")

// defaultTTL is how long an approval given in the console stays valid
// when [Config.TTL] does not say: an hour.
const defaultTTL = time.Hour

// maxForm bounds a decision's form, the note included.
const maxForm = 64 << 10

// Config is what a [Console] serves and how; [New] checks it. Only Store
// and Identity are required.
type Config struct {
	// Store is read for every page and written approvals to. It must stay
	// open while the console is used; [Console.Close] does not close it.
	Store store.Store
	// Identity names the person behind each request ([HeaderIdentity],
	// [TokenIdentity]).
	Identity Identity
	// Namespace limits the console to one namespace: it lists and decides
	// only that namespace's approvals. "" is every namespace.
	Namespace string
	// TTL is how long an approval stays valid once given, in (0,
	// [audit.MaxApprovalTTL]]; 0 is an hour.
	TTL time.Duration
	// Hosts are the hosts a request may name besides an IP address and
	// localhost ("name" for any port, "name:port" for that port only),
	// such as the name a reverse proxy in front of it forwards. A request naming another host is refused (421) before
	// its identity is read: a page of another site whose name was rebound
	// to the console's address (DNS rebinding) is same-origin to itself,
	// so the browser's cross-origin checks do not stop it, but it names
	// its own host.
	Hosts []string
	// Clock is the clock the console shows ages by; nil is time.Now.
	Clock func() time.Time
}

// config is a checked [Config], with its defaults.
type config struct {
	namespace string
	ttl       time.Duration
	now       func() time.Time
	hosts     []string // lower case
}

// check returns cfg with its defaults, or every problem it has, each an
// [ErrInvalidConfig].
func (cfg Config) check() (config, error) {
	c := config{namespace: cfg.Namespace, ttl: cmp.Or(cfg.TTL, defaultTTL), now: cfg.Clock}
	if c.now == nil {
		c.now = time.Now
	}
	for _, h := range cfg.Hosts {
		if h = strings.ToLower(strings.TrimSpace(h)); h != "" {
			c.hosts = append(c.hosts, h)
		}
	}
	var errs []error
	if cfg.Store == nil {
		errs = append(errs, fmt.Errorf("%w: no store", ErrInvalidConfig))
	}
	if cfg.Identity == nil {
		errs = append(errs, fmt.Errorf("%w: no identity: give a trusted header (--identity-header) or a token file (--token-file)", ErrInvalidConfig))
	}
	if c.ttl <= 0 || c.ttl > audit.MaxApprovalTTL {
		errs = append(errs, fmt.Errorf("%w: approval TTL %v outside (0, %v]", ErrInvalidConfig, c.ttl, audit.MaxApprovalTTL))
	}
	return c, errors.Join(errs...)
}

// Console is the approvals console, an [http.Handler]: an inbox of the
// approvals pending (GET /), a trace's timeline and a record's explanation
// (GET /trace), a trace's effects and their attempts (GET /effects), and
// approving or denying an action (POST /decide), the
// only request that writes. Build it with [New]. It is safe for
// concurrent use by any number of requests.
type Console struct {
	s        store.Store
	identity Identity
	cfg      config
	csrfKey  [32]byte
	mux      *http.ServeMux
	origin   *http.CrossOriginProtection

	mu    sync.Mutex
	gates map[string]*toolgate.Gate // by namespace, built on first decision

	// deciding serializes decisions, so that of two people deciding one
	// action at once the second is told it no longer waits.
	deciding sync.Mutex
}

// New builds a console over cfg.Store, which it reads for every page and
// writes approvals to, through a tool-call gate of the decision's
// namespace ([toolgate.Gate.Approver]). A config without a store or an
// identity, or with a TTL outside (0, [audit.MaxApprovalTTL]], is
// refused with every problem it has, each an [ErrInvalidConfig].
func New(cfg Config) (*Console, error) {
	checked, err := cfg.check()
	if err != nil {
		return nil, err
	}
	c := &Console{s: cfg.Store, identity: cfg.Identity, cfg: checked, gates: map[string]*toolgate.Gate{}}
	if _, err := rand.Read(c.csrfKey[:]); err != nil {
		return nil, err
	}
	c.origin = http.NewCrossOriginProtection()
	c.mux = http.NewServeMux()
	c.mux.HandleFunc("GET /{$}", c.inbox)
	c.mux.HandleFunc("GET /trace", c.trace)
	c.mux.HandleFunc("GET /effects", c.effects)
	c.mux.HandleFunc("POST /decide", c.decide)
	c.mux.HandleFunc("GET /style.css", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		w.Write([]byte(styleCSS))
	})
	return c, nil
}

// Close closes the gates the console built; not the store.
func (c *Console) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for ns, g := range c.gates {
		errs = append(errs, g.Close())
		delete(c.gates, ns)
	}
	return errors.Join(errs...)
}

// ServeHTTP answers a request: every response carries a strict content
// security policy, a request addressed to a host the console does not
// serve is refused (421, see [Config.Hosts]) and one that names no identity
// is refused (401), both before anything is read.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// No script, no frame, no foreign resource: stored text that slipped
	// through escaping still could not run or call out.
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
	if !c.hostAllowed(r.Host) {
		http.Error(w, "this console does not serve the host "+strconv.Quote(r.Host)+" (bk serve --hosts)", http.StatusMisdirectedRequest)
		return
	}
	if !c.identified(r) {
		h.Set("WWW-Authenticate", `Basic realm="bk serve", charset="UTF-8"`)
		http.Error(w, "who are you? the console needs an identity (a token, or the proxy's header)", http.StatusUnauthorized)
		return
	}
	// A browser's cross-site POST is refused before the CSRF token is
	// even read: two checks, as either alone has had its bypasses.
	if !c.sameOrigin(r) {
		c.fail(w, http.StatusForbidden, "a cross-origin request: decide from the console's own page")
		return
	}
	c.mux.ServeHTTP(w, r)
}

// identified reports whether the request names a person. The mutation
// switch mutIdentity takes every request as named.
func (c *Console) identified(r *http.Request) bool {
	if mutIdentity {
		return true
	}
	_, ok := c.identity(r)
	return ok
}

// sameOrigin reports whether the request is not a browser's cross-origin
// one. The mutation switch mutCSRF takes every request as same-origin.
func (c *Console) sameOrigin(r *http.Request) bool {
	if mutCSRF {
		return true
	}
	return c.origin.Check(r) == nil
}

// csrfHeld reports whether a form's token is the identity's CSRF token.
// The mutation switch mutCSRF takes any token.
func (c *Console) csrfHeld(token, identity string) bool {
	if mutCSRF {
		return true
	}
	return hmac.Equal([]byte(token), []byte(c.csrf(identity)))
}

// csrf is the form token of an identity: a keyed digest only this console
// can make, so that a page of another site cannot post a decision with
// the person's credentials.
func (c *Console) csrf(identity string) string {
	m := hmac.New(sha256.New, c.csrfKey[:])
	m.Write([]byte(identity))
	return hex.EncodeToString(m.Sum(nil))
}

// inNamespace reports whether ns is one the console shows.
func (c *Console) inNamespace(ns string) bool {
	return c.cfg.namespace == "" || ns == c.cfg.namespace || ns == "" && c.cfg.namespace == blackboard.DefaultNamespace
}

// item is one pending approval as the inbox shows it.
type item struct {
	inspect.PendingApproval
	Digest   string
	ArgsJSON string
	Waited   string
	Since    string // when it started waiting, UTC
	// Budget says what the call's run had spent when the gate decided it,
	// a line per run (the call's own, then each run it draws on); empty
	// when no budget applied.
	Budget   []budgetLine
	Evidence string // the explanation of the action as text: its whole tree
	// Grounds are the beliefs and observations the action rests on.
	Grounds []ground
	// Constraints are the constraints in force when the kernel committed
	// the action (its decision record's), which it passed.
	Constraints []string
	// Rules are the rules on the action's type and the tool's bindings
	// in the policy snapshot its decision record names, which it passed
	// to be committed; nil when the record names no snapshot the store
	// holds.
	Rules []string
}

// ground is a belief or observation under a pending action.
type ground struct {
	Relation, Record, Kind, Summary, Age, Checks, Flags string
}

// grounds flattens the beliefs and percepts of an explanation's tree, each
// once, with its age at now.
func grounds(n *inspect.ExplainNode, now time.Time, seen map[string]bool, out []ground) []ground {
	if n == nil {
		return out
	}
	if (n.Slot == blackboard.Beliefs || n.Slot == blackboard.Percepts) && n.Relation != "" && n.Relation != "proposal" && !seen[n.Record] {
		seen[n.Record] = true
		out = append(out, ground{Relation: n.Relation, Record: n.Record, Kind: n.Kind, Summary: n.Summary,
			Age: waited(now.Sub(time.UnixMilli(n.TimeMS))), Checks: n.Checks, Flags: strings.Join(n.Flags, ",")})
	}
	for _, ch := range n.Children {
		out = grounds(ch, now, seen, out)
	}
	return out
}

// checks returns what the pending decision record of the committed action
// id says it passed: the constraints in force, and the rules and bindings
// of the policy snapshot it names.
// It reads the one decision record the commit wrote ([audit.About]), at
// any length of the trace.
func (c *Console) checks(ctx context.Context, p inspect.PendingApproval) (constraints, rules []string, err error) {
	g, err := c.gate(ctx, p.Namespace)
	if err != nil {
		return nil, nil, err
	}
	d, err := audit.About(ctx, g.Kernel().Reader(), p.ActionID)
	switch {
	case errors.Is(err, blackboard.ErrNotFound):
		return nil, nil, nil
	case err != nil:
		return nil, nil, err
	case d.Outcome != audit.OutcomePendingApproval:
		return nil, nil, nil
	}
	hash, _ := d.Context["policy"].(string)
	rules, err = c.policyRules(ctx, p.Namespace, hash, p.Kind, p.Tool)
	return d.Constraints, rules, err
}

// policyRules lists the rules on actionType and the bindings of tool in
// the policy snapshot whose hash is hash, read from the store's
// namespace's [audit.PolicyTrace] (a few records: one per policy it ran
// under). A snapshot that does not read as recorded ([audit.PolicyOf]) is
// not shown.
func (c *Console) policyRules(ctx context.Context, namespace, hash, actionType, tool string) ([]string, error) {
	if hash == "" {
		return nil, nil
	}
	for r, err := range c.s.ListTrace(ctx, namespace, audit.PolicyTrace(namespace)) {
		if err != nil {
			return nil, err
		}
		ap, err := audit.PolicyOf(r)
		if ap.Hash != hash || errors.Is(err, audit.ErrPolicyRecord) {
			continue
		}
		var pol snapshot.Policy
		if err == nil {
			pol, err = snapshot.Decode(ap)
		}
		if err != nil {
			return nil, nil // not what was in force: nothing to show
		}
		var out []string
		for _, rs := range pol.Rules {
			if rs.On == rules.TargetAction && rs.Target == actionType {
				out = append(out, "rule "+rs.Name+": "+rs.Expr)
			}
		}
		for _, t := range pol.Tools {
			if t.Name != tool {
				continue
			}
			for _, bd := range t.Bindings {
				out = append(out, fmt.Sprintf("binding: %s %s %s.%s", bd.Arg, cmp.Or(bd.Op, "equal"), bd.Percept, cmp.Or(bd.Field, bd.Arg)))
			}
		}
		return out, nil
	}
	return nil, nil
}

type group struct {
	Namespace string
	Items     []item
}

// pending lists the approvals that wait in ns ("" for every namespace the
// console shows), grouped by namespace, oldest first.
func (c *Console) pending(ctx context.Context, ns string) ([]group, error) {
	now := c.cfg.now()
	rows, err := inspect.Approvals(ctx, c.s, cmp.Or(ns, c.cfg.namespace), now)
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(rows, func(a, b inspect.PendingApproval) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.SinceMS, b.SinceMS))
	})
	var out []group
	for _, p := range rows {
		if !c.inNamespace(p.Namespace) {
			continue
		}
		it := item{PendingApproval: p, Waited: waited(time.Duration(p.AgeMS) * time.Millisecond),
			Since: time.UnixMilli(p.SinceMS).UTC().Format(time.RFC3339), Budget: budgetLines(p.Budget)}
		if it.Digest, err = c.digest(ctx, p.ActionID); err != nil {
			return nil, err
		}
		if it.Constraints, it.Rules, err = c.checks(ctx, p); err != nil {
			return nil, err
		}
		// Not HTML-escaped here: html/template escapes it for the page, so
		// that the person reads <script> as written.
		if it.ArgsJSON, err = indented(p.Args); err != nil {
			return nil, err
		}
		if ex, err := inspect.Explain(ctx, c.s, p.ActionID); err == nil {
			it.Evidence = ex.String()
			it.Grounds = grounds(ex.Tree, now, map[string]bool{}, nil)
		} else {
			it.Evidence = "no explanation: " + inspect.Inert(err.Error())
		}
		if len(out) == 0 || out[len(out)-1].Namespace != p.Namespace {
			out = append(out, group{Namespace: p.Namespace})
		}
		out[len(out)-1].Items = append(out[len(out)-1].Items, it)
	}
	return out, nil
}

// digest is the digest an approval of the committed action id binds.
func (c *Console) digest(ctx context.Context, id string) (string, error) {
	act, err := c.s.Get(ctx, id)
	if err != nil {
		return "", err
	}
	return toolgate.ArgsDigest(act.Payload)
}

// waited renders how long an approval has waited: 45s, 12m, 3h10m, 2d4h.
func waited(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(0, int(d.Seconds())))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
}

func (c *Console) inbox(w http.ResponseWriter, r *http.Request) {
	id, _ := c.identity(r)
	groups, err := c.pending(r.Context(), "")
	if err != nil {
		c.fail(w, http.StatusInternalServerError, "cannot read the store: "+err.Error())
		return
	}
	c.render(w, http.StatusOK, "inbox", map[string]any{"Identity": id, "CSRF": c.csrf(id), "Groups": groups,
		"Namespace": c.cfg.namespace, "Now": c.cfg.now().UTC().Format(time.RFC3339)})
}

func (c *Console) trace(w http.ResponseWriter, r *http.Request) {
	id, _ := c.identity(r)
	traceID, recordID := r.URL.Query().Get("id"), r.URL.Query().Get("record")
	if traceID == "" && recordID == "" {
		c.fail(w, http.StatusBadRequest, "give a trace (?id=TRACE) or a record (?record=ID)")
		return
	}
	data := map[string]any{"Identity": id, "Trace": traceID, "Record": recordID}
	if recordID != "" {
		ex, err := inspect.Explain(r.Context(), c.s, recordID)
		if err != nil {
			c.readFail(w, err)
			return
		}
		data["Explanation"] = ex.String()
		if traceID == "" {
			traceID = ex.TraceID
			data["Trace"] = traceID
		}
	}
	ns, err := c.traceNamespace(r.Context(), traceID)
	if err != nil {
		c.readFail(w, err)
		return
	}
	tl, err := inspect.Timeline(r.Context(), c.s, ns, traceID)
	if err != nil {
		c.readFail(w, err)
		return
	}
	if !c.inNamespace(tl.Namespace) {
		c.fail(w, http.StatusNotFound, "no such trace in this console's namespace")
		return
	}
	data["Timeline"], data["Outcome"], data["Picture"] = tl.String(), tl.Outcome, timelineSVG(tl)
	c.render(w, http.StatusOK, "trace", data)
}

// effectView is one effect as the effects page shows it.
type effectView struct {
	inspect.EffectRow
	Last  string
	Steps []stepView
}

// stepView is one record of an effect, its stored text made inert.
type stepView struct {
	inspect.EffectStep
	Time, Lease string
	// Output is a result's output as indented JSON, made inert.
	Output string
}

// effects is a trace's effects and their attempts, read-only: each
// action the gate ran an effect for, each attempt with its number and
// lease, and its result or failure with its code.
func (c *Console) effects(w http.ResponseWriter, r *http.Request) {
	id, _ := c.identity(r)
	traceID := r.URL.Query().Get("id")
	if traceID == "" {
		c.fail(w, http.StatusBadRequest, "give a trace (?id=TRACE)")
		return
	}
	ns, err := c.traceNamespace(r.Context(), traceID)
	if err != nil {
		c.readFail(w, err)
		return
	}
	if !c.inNamespace(ns) {
		c.fail(w, http.StatusNotFound, "no such trace in this console's namespace")
		return
	}
	rows, err := inspect.TraceEffects(r.Context(), c.s, ns, traceID)
	if err != nil {
		c.readFail(w, err)
		return
	}
	views := make([]effectView, 0, len(rows))
	for _, row := range rows {
		v := effectView{EffectRow: row, Last: stampOf(row.LastMS)}
		for _, st := range row.Steps {
			sv := stepView{EffectStep: st, Time: stampOf(st.TimeMS)}
			if st.LeaseUntilMS > 0 {
				sv.Lease = stampOf(st.LeaseUntilMS)
			}
			if len(st.Output) > 0 {
				if sv.Output, err = indented(st.Output); err != nil {
					c.fail(w, http.StatusInternalServerError, "cannot show a result: "+err.Error())
					return
				}
			}
			v.Steps = append(v.Steps, sv)
		}
		views = append(views, v)
	}
	c.render(w, http.StatusOK, "effects", map[string]any{"Identity": id, "Trace": traceID, "Effects": views})
}

// traceNamespace is the namespace of the trace traceID among those the
// console shows (one trace id in two namespaces is two traces): the
// console's namespace when it has one, else the one namespace that holds
// a trace of that id. A trace it does not find is [blackboard.ErrNotFound];
// an id several namespaces hold, in a console of every namespace, is
// [blackboard.ErrInvalidInput].
func (c *Console) traceNamespace(ctx context.Context, traceID string) (string, error) {
	var found []string
	for ts, err := range store.ListTraces(ctx, c.s, c.cfg.namespace) {
		if err != nil {
			return "", err
		}
		if ts.TraceID == traceID {
			found = append(found, ts.Namespace)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("console: no trace %q: %w", traceID, blackboard.ErrNotFound)
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("console: trace %q is in namespaces %s: %w", traceID, strings.Join(found, ", "), blackboard.ErrInvalidInput)
}

// stampOf renders a time in Unix milliseconds as the pages show times:
// UTC, to the millisecond.
func stampOf(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000") }

// indented renders a payload as indented JSON, markup characters kept as
// written (html/template escapes them for the page) and terminal escapes
// made inert.
func indented(p blackboard.Payload) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(p); err != nil {
		return "", err
	}
	return string(inspect.InertJSON(bytes.TrimSpace(b.Bytes()))), nil
}

func (c *Console) readFail(w http.ResponseWriter, err error) {
	if errors.Is(err, blackboard.ErrNotFound) {
		c.fail(w, http.StatusNotFound, "no such trace or record")
		return
	}
	c.fail(w, http.StatusInternalServerError, "cannot read the store: "+err.Error())
}

// decide approves or denies one action. Each check refuses with a page
// that says why, and writes nothing; the gate checks the binding again
// as it writes ([toolgate.Approver.Approve]).
func (c *Console) decide(w http.ResponseWriter, r *http.Request) {
	id, _ := c.identity(r)
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		c.fail(w, http.StatusBadRequest, "unreadable form: "+err.Error())
		return
	}
	f := r.PostForm
	if !c.csrfHeld(f.Get("csrf"), id) {
		c.fail(w, http.StatusForbidden, "the form's CSRF token is missing or is not yours: reload the inbox and decide from it")
		return
	}
	c.deciding.Lock()
	defer c.deciding.Unlock()
	ns, traceID, actionID, digest, note := f.Get("namespace"), f.Get("trace"), f.Get("action"), f.Get("digest"), f.Get("note")
	decision := f.Get("decision")
	if decision != "approve" && decision != "deny" {
		c.fail(w, http.StatusBadRequest, "decision must be approve or deny")
		return
	}
	if !c.inNamespace(ns) {
		c.fail(w, http.StatusForbidden, "namespace outside this console's")
		return
	}
	groups, err := c.pending(r.Context(), cmp.Or(ns, blackboard.DefaultNamespace))
	if err != nil {
		c.fail(w, http.StatusInternalServerError, "cannot read the store: "+err.Error())
		return
	}
	var it *item
	for _, g := range groups {
		for i := range g.Items {
			if x := &g.Items[i]; x.ActionID == actionID && x.TraceID == traceID && x.Namespace == ns {
				it = x
			}
		}
	}
	if it == nil {
		c.fail(w, http.StatusConflict, "this action no longer waits for approval (decided, run, expired or never pending): nothing was recorded")
		return
	}
	// The gate checks the digest too, as it writes: this check is here
	// to say why in the person's words.
	if digest != it.Digest {
		c.fail(w, http.StatusConflict, fmt.Sprintf("the action's arguments are not those the page showed (page digest %q, action's digest %q): nothing was recorded; reload the inbox and look again", digest, it.Digest))
		return
	}
	g, err := c.gate(r.Context(), ns)
	if err != nil {
		c.fail(w, http.StatusInternalServerError, err.Error())
		return
	}
	ap := g.Approver(id)
	if decision == "approve" {
		_, err = ap.Decide(r.Context(), audit.Approval{TraceID: traceID, ActionID: actionID, Digest: digest, Decision: audit.Approved, Note: note, TTL: c.cfg.ttl})
	} else {
		_, err = ap.Decide(r.Context(), audit.Approval{TraceID: traceID, ActionID: actionID, Digest: digest, Decision: audit.Denied, Note: note, TTL: c.cfg.ttl})
	}
	switch {
	case errors.Is(err, blackboard.ErrPermission):
		c.fail(w, http.StatusForbidden, "you proposed this action: someone else must decide it")
		return
	case errors.Is(err, toolgate.ErrDecided):
		// Another console, bk approve or the application decided it
		// between this page's check and the write.
		c.fail(w, http.StatusConflict, "not recorded: "+err.Error())
		return
	case errors.Is(err, blackboard.ErrInvalidInput), errors.Is(err, kernel.ErrInvalidReference):
		c.fail(w, http.StatusConflict, "refused: "+err.Error())
		return
	case err != nil:
		c.fail(w, http.StatusInternalServerError, err.Error())
		return
	}
	verb := map[string]string{"approve": "approved", "deny": "denied"}[decision]
	c.render(w, http.StatusOK, "done", map[string]any{"Identity": id, "Verb": verb, "Item": it})
}

// gate returns the console's tool-call gate of namespace ns: one with no
// tool, as the console runs nothing; it only approves, through the gate's
// checks.
func (c *Console) gate(ctx context.Context, ns string) (*toolgate.Gate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if g := c.gates[ns]; g != nil {
		return g, nil
	}
	g, err := toolgate.New(ctx, toolgate.Config{Kernel: kernel.Config{Store: c.s, Namespace: cmp.Or(ns, blackboard.DefaultNamespace)}})
	if err != nil {
		return nil, err
	}
	c.gates[ns] = g
	return g, nil
}

func (c *Console) fail(w http.ResponseWriter, status int, msg string) {
	c.render(w, status, "error", map[string]any{"Status": status, "Text": http.StatusText(status), "Message": inspect.Inert(msg)})
}

func (c *Console) render(w http.ResponseWriter, status int, page string, data map[string]any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := pages.ExecuteTemplate(w, page, data); err != nil {
		// The status is sent: all that is left is to say so in the page.
		fmt.Fprintf(w, "\n<p>rendering failed</p>")
	}
}
