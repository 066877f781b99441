// Package console is the approvals console, `bk serve`: a small web
// application over a kernel store where a person approves or denies the
// tool calls that wait for approval, with the evidence in front of them.
// It uses net/http and html/template only, and no script.
//
//	GET  /                  the inbox: approvals pending, by namespace, oldest first
//	GET  /trace?id=T        a trace's timeline (inspect.Timeline), drawn and as text
//	GET  /trace?record=R    a record's explanation (inspect.Explain) and its trace's timeline
//	GET  /effects?id=T      a trace's effects and their attempts (the inspector's effects report)
//	POST /decide            approve or deny one action, with a note
//
// Each inbox entry shows what a person needs to decide: the tool and its
// arguments as the committed action holds them (the inspector's approvals listing: never
// as a decision record's context describes them), their digest
// ([toolgate.ArgsDigest]), why the call waits (the approval rule), the
// budget spent (the snapshot of the run budget the gate checked the call
// against, as its decision record carries it: what each run, and each run
// it draws on, had spent of each limit, and its pressure; "no budget"
// when none applied), the beliefs and observations it rests on with their
// age, the evidence checks they passed and their flags, the rules on its
// type and the tool's bindings it passed (from the policy snapshot its
// decision record names), the constraints in force when the kernel
// committed it, the whole explanation, and how long
// it has waited and since when.
//
// # In a program
//
// A [Console] is an [http.Handler]: [New] builds one from a [Config] (the
// store, the [Identity] of each request, and optionally one namespace,
// the approvals' TTL, the host names it answers to and a clock), and a
// program mounts it on its own server, behind its own proxy or TLS.
// [Console.Close] closes the gates it built, not the store:
//
//	c, err := console.New(console.Config{Store: s, Identity: console.HeaderIdentity("X-User"), Hosts: []string{"approvals.example"}})
//	if err != nil {
//		return err
//	}
//	defer c.Close()
//	http.Handle("/", c)
//
// `bk serve` does the same over the store it opens, on a listener of its
// own.
//
// # Effects and their attempts
//
// The effects page of a trace, linked from each inbox entry and from the
// trace page, lists every action the gate ran an effect for, in order:
// each attempt with its number, its lease and the approval it ran under,
// and how the effect ended, its result's output or its failure (message,
// category, retryable) or escalation, with its code. It reads only the
// gate's own effect records ([audit.EffectOf]); every stored text on it
// is escaped, and it writes nothing.
//
// # Deciding
//
// A decision is bound to the action and the digest the page showed: the
// console refuses it (409, with the reason on the page, nothing written)
// when the action no longer waits (decided, run, expired) or the digest is
// not that of the action's arguments. Otherwise it writes the approval
// through a tool-call gate with no tool over the same store
// ([toolgate.Gate.Approver], as the identity of the request), which checks
// the binding again and refuses the proposer (403). The approval expires
// after an hour ([Config.TTL]) and is used once: the application's gate
// consumes it when it resumes the action ([toolgate.Gate.Execute], or its
// supervisor), and a denial sends the action to the gate's safe fallback.
// The console runs no tool.
//
// # Who may do what
//
// Every request names a person or is refused (401) before anything is
// read: [HeaderIdentity] trusts a header a reverse proxy sets after it
// authenticated the person; [TokenIdentity] maps secret tokens
// ([ReadTokens]) to names, given as a bearer token or as a browser's
// basic-auth password (the browser's prompt takes any user name: the
// token alone names the person). [New] refuses to build a console without one. A
// decision must carry the form's CSRF token, a keyed digest of the
// identity that only this console can make, and a browser's cross-origin
// POST is refused ([http.CrossOriginProtection]). Every page is sent with
// a content security policy that allows no script, no frame and nothing
// from elsewhere. Stored text is escaped by html/template and passed
// through the inspector's inert rendering, so HTML shows as text and a terminal escape
// reads as \x1b. Everything but POST /decide is read-only.
//
// # The timeline as a picture
//
// The trace page draws the trace's timeline ([inspect.Timeline]) as an
// SVG picture inlined in the page, made on the server: a column per stage
// a tool call goes through (observation, belief, plan, action, approval,
// attempt, result), a row per event in order, each event a dot in its
// column joined to the one before by an arrow, with its line beside it; a
// refusal is drawn in its own colour (red) with its code. Decision records
// repeat the kernel's events and are left out, but for a refusal that left
// no other event (a contract's, a binding's) and an action's wait for
// approval. Every stored text in the picture is passed through
// the inspector's inert rendering and XML-escaped; the page stays under the same policy,
// with no script. The timeline as text follows it, folded.
//
// # Tested in a browser
//
// The module inspect/console/browsertest drives the console in headless
// Chromium (chromedp) over a store examples/support_desk filled; `make
// browser` runs it, and CI with it. `bk serve --dsn` is tested over
// PostgreSQL (TestServePostgres, under .ci/with-postgres).
//
// # Limits
//
// A decision on an action is exclusive across every console, bk approve
// and the application over one store: the gate's write claims it
// ([toolgate.ErrDecided]), so of two people deciding one action at the
// same moment one is recorded and the other is told it was not (409). An
// approval that expired unused can be given again; a denial, a used
// approval or a committed fallback cannot.
//
// A [Console] is safe for concurrent use by any number of requests.
package console
