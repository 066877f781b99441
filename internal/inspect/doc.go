// Package inspect is the machinery of the bk inspector (cmd/bk): its
// commands, reports and their rendering, kept inside the module so that
// they are tested without being a surface to hold. The public package
// inspect (Explain and Timeline as a library) and the approvals console
// (inspect/console) are built on it. It reads a kernel
// store and answers "why did the agent do this?" without writing a byte,
// and lets a person decide an action waiting for approval: at a terminal
// (bk approve, bk deny) or in a browser (bk serve, the approvals console).
//
//	bk traces                 traces with what happened to their actions, and counts
//	bk timeline TRACE         a trace's events in order (--steps: led by the paper's t0-t9)
//	bk explain RECORD         a decision's provenance, down to the percepts
//	bk stats                  evaluation metrics ([Metrics]), decisions by code, learned constraints, records per slot
//	bk approvals              approvals pending, with their age
//	bk effects                effect attempts and outcomes
//	bk export [--trace T]     records as JSON lines
//	bk approve ACTION --as NAME --digest D [--note N] [--ttl T]
//	bk deny ACTION --as NAME --digest D [--note N] [--ttl T]
//	bk serve --token-file F   the approvals console in a browser (or --identity-header H; --addr, --hosts)
//	bk erase TRACE --keys D   erase a trace's masked values: destroy its key (the trace's namespace's) in the key directory
//	bk verify [--key PUB]...  every trace's hash chain, the checkpoints' sequence and signatures, the invariants (exit 1 on a break)
//	bk export --trace T --bundle FILE   trace T's evidence bundle (package chain's Bundle), written whole or not at all
//	bk verify --bundle FILE --key PUB   an evidence bundle, offline: no store is opened
//
// Every command takes --db FILE or --dsn DSN, exactly one (else $BK_DB or
// $BK_DSN, exactly one; else bk.db), --namespace NS (default: every
// namespace) and --json. A PostgreSQL store (--dsn) is opened on
// connections whose transactions default to read-only: the server refuses
// any write, so bk neither creates nor migrates a schema. A SQLite
// database is opened with
// [sqlitestore.OpenReadOnly]: no migration, no lock held beyond one short
// read at a time, so a process that is writing the store is not blocked;
// it is checked whole first ([sqlitestore.WithCheck]), so that a damaged
// file is reported as corrupt. [Main] returns [ExitOK], [ExitError] (the
// command failed: a missing, corrupt or foreign file, an unknown trace or
// record) or [ExitUsage]; -h prints the usage to stdout.
//
// `bk serve` runs the approvals console a program gives [Main] with
// [WithServe]: package internal/inspect/serve's Run (cmd/bk does; this
// package cannot import the console, which is built on its reports). It needs
// exactly one of --identity-header and --token-file (else [ExitUsage],
// before the store is opened), opens the store for writing as bk approve
// does, and listens on [DefaultAddr], this host only, unless --addr says
// otherwise, until it is interrupted. It serves a request addressed (its
// Host) to an IP address, localhost, --addr's host or a name --hosts
// lists, and refuses a token file group or others may read or write.
//
// The reports themselves ([Traces], [Timeline], [Explain], [Stats],
// [Approvals], [Effects], [TraceEffects], [Export]) take any [store.Store] and only read
// it, so they are safe for concurrent use as far as the store is. They
// read the tool-call gate's effect records through [audit.EffectOf],
// and print every stored text through [Inert] (JSON through [InertJSON]),
// so that what a tool, a model or any writer stored cannot act on the
// operator's terminal.
//
// # Verifying a history
//
// bk verify runs [ledger.Verify] over the whole store (a store that
// keeps hash chains, [store.Chainer]) and prints, per trace, its events,
// whether a checkpoint covers it (signed: its signature was checked
// against a --key) and its chain's first break: the fault, the event and
// the record ([chain.Break]); then the checkpoints' own breaks, and the
// violations of [invariant.Check] (its chain_intact is the walk above,
// not printed twice). --namespace narrows the traces printed, not the
// invariants. It exits 1 when anything is broken, and also when the
// store cannot be read. Without --key the checkpoints' sequence is
// checked, not their signatures, and the output says so. A key file
// (--key, repeatable: a rotated key's old one too) holds the 32-byte
// Ed25519 public key as 64 hex digits, space around them ignored.
// --trust FILE gives checkpoints kept outside the store
// (kernel.Config.OnCheckpoint's), as JSON objects one after another: the
// store must hold each as it was, so newer ones dropped are caught.
//
// bk export --trace T --bundle FILE writes T's evidence bundle: T's
// events, the events of its namespace's policy trace when T's records
// name a policy (a decision's context, the request record) and that
// trace is covered, and the latest checkpoint covering each
// ([ledger.Covering]); a trace no checkpoint covers is refused ("run the
// kernel with a signing key"). The file is written to a temporary file
// beside it and renamed, so a failure leaves none. bk verify --bundle
// FILE --key PUB checks it with [chain.VerifyBundle], with no store:
// see there what a verified bundle proves and what it does not.
//
// # Approving from a terminal
//
// bk approve and bk deny write one approval record each, through the
// tool-call gate's [toolgate.Approver] on a gate without tools over the
// store (deciding reads the committed action and its proposal; it needs no
// tool). The binding is the gate's: --digest must be the [toolgate.ArgsDigest]
// of the committed arguments (bk approvals shows it), the approver may not
// be the action's proposer, the decision expires after --ttl (default
// [DefaultApprovalTTL]) and an approval is consumed by the action's first
// attempt. The gate takes one decision per action at a time: of two
// decisions made at once (two terminals, a terminal and a console) one is
// written and the other refused ([toolgate.ErrDecided]), and a new decision
// is taken only after an approval that expired unused. bk also refuses an
// action [Approvals] does not list ([ErrNotPending]: one denied, approved
// with the approval in force or used, started or done, or one that needs
// no approval), and NAME when the action was proposed by the gate caller
// NAME ([audit.CallerWriter]). A refused decision writes nothing and
// exits 1; the application's gate runs (or, denied, escalates) the action
// when it next executes or recovers it. NAME is recorded as given: the
// terminal is trusted as whoever runs it, and whoever can write the store
// can approve as any name. A deployment that needs a verified approver
// offers the web console instead, which takes the identity from the
// deployment.
//
// # What the reports say
//
// A trace's outcome ([TraceRow], [TimelineReport]) is what happened to its
// actions, by type, in the order the types first appear: "lookup_order
// executed; issue_refund refused, denied; queue_for_review committed;
// send_email executed". Each action proposal, each call refused before
// it reached the kernel, and each committed action counts once, with its
// [Fate]: refused, executed (its effect succeeded), failed, denied (by a
// person), expired, pending (waiting for an approver), approved, running,
// escalated, retired or committed (nothing ran it: a fallback, or a
// kernel used without the tool-call gate). [TimelineReport.Actions] holds
// the counts.
//
// [Explain] tells a fallback by its type: an action type is a safe
// fallback when the trace shows the kernel committing an action of it on
// no belief, which the kernel does only for a type registered as one
// ([kernel.ActionSpec.SafeFallback]), and no tool running one (the
// tool-call gate registers its read-only tools as safe too). An argument
// named "reason" on any other action is an argument. A fallback stands in for the action it
// escalates (the tool-call gate's), else for the latest record that came
// to the code it gives as its reason, and for nothing else: no unrelated
// earlier refusal is blamed. A committed action a person denied is
// explained as "denied", with the approval, who denied it and the note as
// its root cause, whether asked about the action, its escalation, its
// decision record or the fallback that followed. A root cause's detail
// is printed whole: for a rule, the rule, the clause that was false and
// the values it read (see package rules). The detail is stored with the
// decision record the tool-call gate (or the orchestrator) writes; a
// refusal without one is explained from the trace, by its code.
package inspect
