package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/cmdline"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/sqlitestore"
)

// Exit codes of [Main], every program's (internal/cmdline).
const (
	ExitOK    = cmdline.ExitOK
	ExitError = cmdline.ExitError // the command failed (a missing file, a corrupt one, not a store, an unknown record)
	ExitUsage = cmdline.ExitUsage // the command line is wrong
)

// command is one subcommand: a row of [commands]. A command adds its own
// flags to the common ones with flags (which may set env.check to validate
// them), and runs with the store opened read-only in env.
type command struct {
	name, args, help string
	run              func(ctx context.Context, env *env, args []string) error
	flags            func(fs *flag.FlagSet, env *env)
}

// writes reports whether the command records decisions (approve, deny,
// serve): its store is opened for writing, and its usage says so.
func (c *command) writes() bool {
	return c.name == "approve" || c.name == "deny" || c.name == "serve"
}

func commands() []command {
	return []command{
		{"traces", "", "traces with their outcome and counts", runTraces, nil},
		{"timeline", "TRACE", "a trace's events, in order (--steps: led by the paper's loop steps t0-t9)", runTimeline,
			func(fs *flag.FlagSet, e *env) {
				fs.BoolVar(&e.steps, "steps", false, "lead each event with its step of the paper's loop (t0-t9), as the paper prints traces")
			}},
		{"explain", "RECORD", "a decision's provenance: plan, beliefs, evidence, percepts; root cause", runExplain, nil},
		{"stats", "", "decisions by code, learned constraints, records per slot", runStats, nil},
		{"approvals", "", "approvals pending, with their age", runApprovals, nil},
		{"effects", "", "effect attempts and outcomes", runEffects, nil},
		{"export", "", "records as JSON lines (all, or --trace T); with --bundle FILE, trace T's signed evidence bundle", runExport, exportFlags},
		{"approve", "ACTION", "approve an action waiting for approval, bound to its arguments' digest (writes one record)", runApprove, decisionFlags},
		{"deny", "ACTION", "deny an action waiting for approval: the gate takes its fallback (writes one record)", runDeny, decisionFlags},
		{"serve", "", "the approvals console in a browser: approve or deny, see evidence and timelines", runServe, serveFlags},
		{"replay", "", "re-run traces from the store alone, under their recorded policy or --rule NAME=EXPR, and list the decisions that differ (exit 0 when some do, 1 only on an error)", runReplay, replayFlags},
		{"verify", "", "check every trace's hash chain, the signed checkpoints (--key FILE) and the invariants; exit 1 when any breaks; --bundle FILE: an exported bundle, offline", runVerify, verifyFlags},
		{"erase", "TRACE", "erase a trace's masked values: destroy its key in --keys DIR, in --namespace or the one namespace holding TRACE (the store is only read)", runErase, eraseFlags},
	}
}

// env is what a command runs with.
type env struct {
	db, dsn, namespace, trace string
	kind                      string // storeflag.SQLite or storeflag.Postgres, once resolved
	json                      bool
	steps                     bool        // timeline --steps
	keys                      string      // erase's key directory
	rules                     ruleFlags   // replay's --rule
	decide                    decision    // approve and deny
	serve                     ServeConfig // serve's flags
	keyFiles                  keyFiles    // verify's --key
	bundle                    string      // verify's and export's --bundle
	trust                     string      // verify's --trust
	// offline: the command reads no store (verify --bundle).
	offline bool
	// given is a store a test hands in (export_test.go), used instead of
	// the one the flags name.
	given store.Store
	// serveFunc is the approvals console bk serve runs ([WithServe]).
	serveFunc func(ctx context.Context, cfg ServeConfig) error
	// check, when a command's flags set it, validates them once parsed,
	// before the store is opened (a usage error: cmdline.Usagef).
	check func() error
	out   io.Writer
	store store.Store
	now   time.Time
}

// Main runs the bk command line (args without the program name), writing
// to stdout and stderr, and returns the exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer, opts ...Option) int {
	e := &env{out: stdout, now: time.Now()}
	for _, o := range opts {
		if o != nil {
			o(e)
		}
	}
	top := flag.NewFlagSet("bk", flag.ContinueOnError)
	common(top, e, "read, opened read-only but by approve, deny and serve")
	top.Usage = func() { usage(top.Output()) }
	// The command and its arguments follow the common flags.
	if err := cmdline.Parse(top, args, math.MaxInt, stdout, stderr); err != nil {
		return cmdline.Code(err)
	}
	rest := top.Args()
	if len(rest) == 0 {
		fmt.Fprintln(stderr, "bk: no command")
		usage(stderr)
		return ExitUsage
	}
	var cmd *command
	for _, c := range commands() {
		if c.name == rest[0] {
			cmd = &c
		}
	}
	if cmd == nil {
		if rest[0] == "help" {
			if len(rest) > 1 {
				fmt.Fprintf(stderr, "bk help: unexpected argument %q\n", rest[1])
				usage(stderr)
				return ExitUsage
			}
			usage(stdout)
			return ExitOK
		}
		fmt.Fprintf(stderr, "bk: unknown command %q\n", rest[0])
		usage(stderr)
		return ExitUsage
	}
	sub := flag.NewFlagSet("bk "+cmd.name, flag.ContinueOnError)
	how := "read, opened read-only"
	if cmd.writes() {
		how = "decide in, opened for writing the decision's record"
	}
	common(sub, e, how)
	if cmd.flags != nil {
		cmd.flags(sub, e)
	}
	sub.Usage = func() {
		fmt.Fprintf(sub.Output(), "usage: bk %s [flags] %s\n  %s\n\nflags:\n", cmd.name, cmd.args, cmd.help)
		sub.PrintDefaults()
	}
	want := 0
	if cmd.args != "" {
		want = 1
	}
	if err := cmdline.Parse(sub, interleave(rest[1:], sub), want, stdout, stderr); err != nil {
		return cmdline.Code(err)
	}
	if sub.NArg() != want {
		fmt.Fprintf(stderr, "bk %s: missing %s\n", cmd.name, cmd.args)
		sub.Usage()
		return ExitUsage
	}
	if e.check != nil {
		if err := e.check(); err != nil {
			fmt.Fprintf(stderr, "bk %s: %s\n", cmd.name, strings.TrimPrefix(err.Error(), cmdline.ErrUsage.Error()+": "))
			sub.Usage()
			return ExitUsage
		}
	}
	if e.offline {
		if err := cmd.run(ctx, e, sub.Args()); err != nil {
			fmt.Fprintln(stderr, "bk:", Inert(err.Error()))
			return ExitError
		}
		return ExitOK
	}
	if err := e.resolve(); err != nil {
		fmt.Fprintf(stderr, "bk %s: %s\n", cmd.name, strings.TrimPrefix(err.Error(), cmdline.ErrUsage.Error()+": "))
		sub.Usage()
		return ExitUsage
	}
	// A SQLite file is checked whole before use: a damaged file is
	// reported as corrupt, not as missing traces or records.
	s, closeStore, err := e.open(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "bk:", Inert(err.Error()))
		return ExitError
	}
	defer closeStore()
	e.store = s
	if err := cmd.run(ctx, e, sub.Args()); err != nil {
		fmt.Fprintln(stderr, "bk:", Inert(err.Error())) // errors quote stored ids
		return ExitError
	}
	return ExitOK
}

// interleave moves flags given after the positional argument in front of
// it ("bk timeline T --json"), as the flag package stops at the first
// non-flag.
func interleave(args []string, fs *flag.FlagSet) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			pos = append(pos, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if f := fs.Lookup(name); f != nil {
			if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
				continue
			}
			if i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
		}
	}
	return append(flags, pos...)
}

// common declares the flags every command takes; how says what the
// command does with the store it names.
func common(fs *flag.FlagSet, e *env, how string) {
	fs.StringVar(&e.db, "db", e.db, "the SQLite kernel store to "+how+" (default $BK_DB, else bk.db)")
	// A DSN given before the command is kept without being the flag's
	// default, which a usage message would print, password and all.
	dsn := e.dsn
	fs.StringVar(&e.dsn, "dsn", "", "the PostgreSQL kernel store to "+how+", instead (default $BK_DSN)")
	e.dsn = dsn
	fs.StringVar(&e.namespace, "namespace", e.namespace, "only this namespace (default: every namespace)")
	fs.BoolVar(&e.json, "json", e.json, "print JSON instead of text")
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: bk [--db FILE | --dsn DSN] [--namespace NS] [--json] COMMAND [ARG]")
	fmt.Fprintln(w, "\nThe Blackboard Kernel inspector: reads a kernel store (SQLite or PostgreSQL),\nread-only but for approve and deny.\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %-7s %s\n", c.name, c.args, c.help)
	}
}

// describe words an open error for a person.
func describe(path string, err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("%s: no such file (give the store with --db FILE or $BK_DB)", path)
	case errors.Is(err, sqlitestore.ErrCorrupt):
		return fmt.Sprintf("%s is corrupt (SQLite cannot read it; restore it from a backup): %v", path, err)
	case errors.Is(err, sqlitestore.ErrNotAStore):
		return fmt.Sprintf("%s is not a kernel store (no blackboard records table): %v", path, err)
	case errors.Is(err, sqlitestore.ErrSchemaTooNew):
		return fmt.Sprintf("%s was written by a newer version of bk: install a newer bk (go install github.com/blackboardkernel/bk/cmd/bk@latest): %v", path, err)
	case errors.Is(err, sqlitestore.ErrSchemaTooOld):
		return err.Error()
	}
	return err.Error()
}

// writeJSON prints v as indented JSON, through InertJSON: stored
// text reaches the terminal with no character it would act on.
func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(InertJSON(b), '\n'))
	return err
}

// writeList prints rows as JSON with --json, else as aligned columns under
// header (tab-separated), one line a row, or the line none when there are
// no rows. line returns a row's columns; each is printed through
// Inert, so that stored text can neither act on the terminal nor
// add a column or a line.
func writeList[T any](e *env, rows []T, none, header string, line func(T) []string) error {
	if e.json {
		return writeJSON(e.out, rows)
	}
	if len(rows) == 0 {
		_, err := fmt.Fprintln(e.out, none)
		return err
	}
	tw := tabwriter.NewWriter(e.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		cols := line(r)
		for i := range cols {
			cols[i] = Inert(cols[i])
		}
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
	}
	return tw.Flush()
}

// clip fits s into n runes for a table column (before it is made inert).
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// age renders a duration for a person: 45s, 12m, 3h10m, 2d4h.
func age(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
}

func stamp(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05") }

// inNamespace reports whether a record or trace of ns passes --namespace.
func (e *env) inNamespace(ns string) bool {
	return e.namespace == "" || ns == e.namespace || ns == "" && e.namespace == blackboard.DefaultNamespace
}

// lineWriter writes values as JSON lines through InertJSON.
type lineWriter struct{ w io.Writer }

func (l lineWriter) Encode(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = l.w.Write(append(InertJSON(b), '\n'))
	return err
}

func newLineEncoder(w io.Writer) lineWriter { return lineWriter{w} }
