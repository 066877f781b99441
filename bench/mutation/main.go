//go:build bkmutate

// Command mutation shows that every check of the gate and of the layers
// around it is load-bearing. Built with the bkmutate tag, each package that
// has such checks registers one switch per check (internal/mutant); for
// each switch, this program turns it on, plays adversarial_bk in this
// process (for the kernel's checks the adversary can reach) and runs the
// tests of the packages that guard the check (test binaries built with the
// same tag, BK_MUTATE naming the switch), and prints which attacks and
// which tests noticed the check missing.
//
//	go run -tags bkmutate ./bench/mutation             # make mutation
//	go run -tags bkmutate ./bench/mutation -full       # make mutation-full
//	go run -tags bkmutate ./bench/mutation -tests=false -only stale,recheck
//
// A switch's tests are narrowed to those that noticed it in the last full
// run, as noticed.txt records (noticed.go); -full runs every test of the
// guarding packages and rewrites that file.
//
// The modules nested in the tree (the framework adapters under adapters/,
// each with its own dependencies) cannot be linked into this program:
// their switches are read from their source (nested.go), and their tests
// are built and run in their own module, BK_MUTATE naming the switch.
//
// It exits 1 when the hardened kernel does not hold against every attack,
// when some check is noticed by no attack and no test, or when some attack
// does not fail against the kernel missing the check it targets; 2 for a
// wrong command line. -h prints the flags to standard output.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/blackboardkernel/bk/bench/study"
	"github.com/blackboardkernel/bk/internal/cmdline"
	"github.com/blackboardkernel/bk/internal/mutant"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(cmdline.Exit("mutation", err, os.Stderr, nil))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mutation", flag.ContinueOnError)
	seeds := fs.Int("seeds", 66, "seeds per task of each adversarial run")
	tests := fs.Bool("tests", true, "also run the guarding packages' tests against each mutant")
	full := fs.Bool("full", false, "run every guarding package's tests in full, and write the map of the tests that noticed each switch (make mutation-full)")
	mapPath := fs.String("map", "", "the map of the tests that noticed each switch (default: "+noticeFile+" in the module)")
	only := fs.String("only", "", "comma-separated switches to run (default: all)")
	parallel := fs.Int("parallel", 2, "test binaries running at once")
	md := fs.Bool("md", false, "print the tables as markdown")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: mutation [flags]   (built with -tags bkmutate)")
		fs.PrintDefaults()
	}
	if err := cmdline.Parse(fs, args, 0, stdout, stderr); err != nil {
		return err
	}
	var names []string
	if *only != "" {
		names = strings.Split(*only, ",")
	}
	root := moduleRoot()
	all, err := everySwitch(root)
	if err != nil {
		return err
	}
	ms, err := selected(all, names)
	if err != nil {
		return err
	}
	if *mapPath == "" {
		*mapPath = filepath.Join(root, noticeFile)
	}
	start := time.Now()

	var testResults []testResult
	var testsDone sync.WaitGroup
	var nm noticeMap
	if *tests {
		if nm, err = readNoticeMap(*mapPath); err != nil {
			if *full && len(names) > 0 {
				return fmt.Errorf("%w (a full run of some switches updates the map; run them all to rewrite it)", err)
			}
			fmt.Fprintf(stderr, "mutation: %v: every switch's guarding packages run in full\n", err)
			nm = noticeMap{}
		}
		bins, cleanup, err := buildTests(ctx, ms)
		if err != nil {
			return err
		}
		defer cleanup()
		plans := make([]testPlan, len(ms))
		if !*full {
			listed, err := listTests(ctx, bins)
			if err != nil {
				return err
			}
			for i, m := range ms {
				plans[i].narrow, plans[i].why = nm.narrowed(m, listed)
			}
		}
		testResults = make([]testResult, len(ms))
		testsDone.Go(func() { runTests(ctx, bins, ms, plans, *parallel, testResults) })
	}

	adversaryStart := time.Now()
	base, err := playAdversary(ctx, "", *seeds)
	if err != nil {
		return err
	}
	rows := make([]row, len(ms))
	byTarget := map[string]outcome{}
	for i, m := range ms {
		rows[i].m = m
		if !m.Adversary {
			continue
		}
		o, err := playAdversary(ctx, m.Name, *seeds)
		if err != nil {
			return err
		}
		rows[i].judge(o)
		byTarget[m.Name] = o
	}
	adversaryTook := time.Since(adversaryStart)
	testsDone.Wait()
	for i := range testResults {
		rows[i].tests, rows[i].testErr = testResults[i].failed, testResults[i].err
	}
	if err := ctx.Err(); err != nil {
		return err
	}

	printChecks(stdout, rows, *tests, *md)
	fmt.Fprintln(stdout)
	printAttacks(stdout, byTarget, *md)
	problems := gaps(base, rows, byTarget, *tests)
	for _, r := range rows {
		if r.testErr != "" {
			problems = append(problems, fmt.Sprintf("check %s: tests: %s", r.m.Name, r.testErr))
		}
	}
	if *tests && !*full {
		printStale(stdout, ms, testResults, nm.stale(all))
	}
	if *tests && *full {
		if len(names) == 0 {
			nm = noticeMap{}
		}
		for _, name := range nm.stale(all) {
			delete(nm, name)
		}
		for i, m := range ms {
			if testResults[i].err == "" {
				nm[m.Name] = testResults[i].mapped
			} else {
				delete(nm, m.Name) // stale: the next run runs it in full
			}
		}
		if err := writeNoticeMap(*mapPath, nm); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\nwrote %s\n", *mapPath)
	}
	fmt.Fprintf(stdout, "\n%d checks, %d attacks, %d seeds per task; %s", len(ms), len(study.AttackNames()), *seeds,
		time.Since(start).Round(100*time.Millisecond))
	fmt.Fprintf(stdout, " (adversary %s", adversaryTook.Round(100*time.Millisecond))
	if *tests {
		runs, narrowed, took := 0, 0, time.Duration(0)
		for _, r := range testResults {
			runs += r.runs
			narrowed += r.narrowedRuns
			took += r.took
		}
		fmt.Fprintf(stdout, "; %d test binary runs, %d of them narrowed to the map's tests, %s summed", runs, narrowed,
			took.Round(100*time.Millisecond))
	}
	fmt.Fprintln(stdout, ")")
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(stdout, "GAP:", p)
		}
		return fmt.Errorf("%d gaps", len(problems))
	}
	fmt.Fprintln(stdout, "every check is noticed by an attack or a test, and every attack wins against the kernel missing its target")
	return nil
}

// printStale says for which switches the map of what noticed them was not
// used, or named tests that passed, and which of its entries name switches
// that no longer exist.
func printStale(w io.Writer, ms []mutant.Switch, results []testResult, gone []string) {
	var lines []string
	for i, m := range ms {
		if r := results[i]; r.why != "" {
			lines = append(lines, fmt.Sprintf("%s: %s (its guarding packages ran in full)", m.Name, r.why))
		} else if len(r.passed) > 0 {
			lines = append(lines, fmt.Sprintf("%s: noticed, but these tests the map names passed: %s", m.Name, strings.Join(r.passed, ", ")))
		}
	}
	for _, name := range gone {
		lines = append(lines, fmt.Sprintf("%s: in the map, but no such switch", name))
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(w, "\nthe map of the tests that noticed each switch (%s) is stale; make mutation-full rewrites it:\n", noticeFile)
	for _, l := range lines {
		fmt.Fprintln(w, "  "+l)
	}
}

// printChecks prints one row per check: the attacks that noticed it
// missing and the tests that failed.
func printChecks(w io.Writer, rows []row, tests, md bool) {
	header := []string{"check disabled", "unsafe refunds (episodes)", "other failures"}
	if tests {
		header = append(header, "tests failed")
	}
	cells := [][]string{header}
	for _, r := range rows {
		unsafe, other := orDash(strings.Join(r.unsafe, ", ")), orDash(strings.Join(r.other, ", "))
		if !r.m.Adversary {
			unsafe, other = "(tests only)", "(tests only)"
		}
		line := []string{r.m.Name, unsafe, other}
		if tests {
			t := fmt.Sprintf("%d: %s", len(r.tests), strings.Join(r.tests, ", "))
			if r.testErr != "" {
				t = "error: " + r.testErr
			}
			line = append(line, t)
		}
		cells = append(cells, line)
	}
	printTable(w, cells, md)
}

// printAttacks prints one row per attack: how it fared against the
// kernel missing the check it targets.
func printAttacks(w io.Writer, byTarget map[string]outcome, md bool) {
	cells := [][]string{{"attack", "target", "against the kernel without its target", "runs without"}}
	for _, a := range study.Catalogue() {
		res := "(not run)"
		if o, ok := byTarget[a.Target]; ok {
			s := o[a.Name]
			res = fmt.Sprintf("%s of %d episodes", orDash(failure(s)), s.Episodes)
		}
		cells = append(cells, []string{a.Name, a.Target, res, orDash(a.Without)})
	}
	printTable(w, cells, md)
}

// printTable prints a header row and rows, aligned or as markdown.
func printTable(w io.Writer, cells [][]string, md bool) {
	if md {
		for i, r := range cells {
			fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
			if i == 0 {
				fmt.Fprintf(w, "|%s\n", strings.Repeat("---|", len(r)))
			}
		}
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range cells {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// testResult is what the test runs against one mutant showed.
type testResult struct {
	// failed are the top-level tests that failed, package-qualified
	// outside the kernel; byPkg the same by guarding package, bare, with
	// an empty list for a package that ran and noticed nothing.
	failed []string
	byPkg  map[string][]string
	// mapped is byPkg as the map records it: without the tests that hung
	// when some other test failed.
	mapped map[string][]string
	err    string
	// why is set when the map of what noticed the switch was not used:
	// its guarding packages ran in full. passed are the tests the map
	// names that passed when the run was narrowed to them.
	why    string
	passed []string
	// runs counts the test binaries run, narrowedRuns those narrowed to
	// the map's tests; took is their summed wall time.
	runs, narrowedRuns int
	took               time.Duration
}

// testPlan is how one switch's tests run: narrow names, by package, the
// only tests to run (nil: every guarding package in full); why says why
// the map was not used, if it was not.
type testPlan struct {
	narrow map[string][]string
	why    string
}

// buildTests compiles, with the bkmutate tag, the tests of every package
// that guards one of ms, and returns the binaries by import path. The
// packages of one module build in one go command, which compiles them in
// parallel; a package of a nested module (an adapter) is built in its
// module.
func buildTests(ctx context.Context, ms []mutant.Switch) (map[string]string, func(), error) {
	dir, err := os.MkdirTemp("", "bkmutate-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	var mods []string
	byMod := map[string][][]string{} // batches of packages with distinct last elements
	seen := map[string]bool{}
	for _, m := range ms {
		for _, pkg := range m.Tests {
			if seen[pkg] {
				continue
			}
			seen[pkg] = true
			mod := moduleDir(packageDir(pkg))
			if _, ok := byMod[mod]; !ok {
				mods = append(mods, mod)
			}
			batches := byMod[mod]
			i := slices.IndexFunc(batches, func(b []string) bool {
				return !slices.ContainsFunc(b, func(p string) bool { return path.Base(p) == path.Base(pkg) })
			})
			if i < 0 {
				batches, i = append(batches, nil), len(batches)
			}
			batches[i] = append(batches[i], pkg)
			byMod[mod] = batches
		}
	}
	bins := map[string]string{}
	for _, mod := range mods {
		for _, batch := range byMod[mod] {
			out := filepath.Join(dir, strconv.Itoa(len(bins)))
			if err := os.Mkdir(out, 0o700); err != nil {
				cleanup()
				return nil, nil, err
			}
			cmd := exec.CommandContext(ctx, "go", append([]string{"test", "-c", "-tags", "bkmutate", "-o", out + string(filepath.Separator)}, batch...)...)
			cmd.Dir = mod
			if out, err := cmd.CombinedOutput(); err != nil {
				cleanup()
				return nil, nil, fmt.Errorf("building the tests of %s: %v\n%s", strings.Join(batch, " "), err, out)
			}
			for _, pkg := range batch {
				bin := filepath.Join(out, path.Base(pkg)+".test")
				if _, err := os.Stat(bin); err != nil {
					cleanup()
					return nil, nil, fmt.Errorf("building the tests of %s: %w", pkg, err)
				}
				bins[pkg] = bin
			}
		}
	}
	return bins, cleanup, nil
}

// listTests returns, by package, the top-level tests, examples and fuzz
// targets each binary of bins has.
func listTests(ctx context.Context, bins map[string]string) (map[string]map[string]bool, error) {
	out := map[string]map[string]bool{}
	for pkg, bin := range bins {
		cmd := exec.CommandContext(ctx, bin, "-test.list", ".")
		cmd.Dir = packageDir(pkg)
		cmd.Env = append(os.Environ(), "BK_MUTATE=")
		b, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("listing the tests of %s: %w", pkg, err)
		}
		out[pkg] = map[string]bool{}
		for _, name := range strings.Fields(string(b)) {
			out[pkg][name] = true
		}
	}
	return out, nil
}

// runTests runs, for each switch, the tests its plan names, parallel test
// binaries at a time, and records the top-level tests that failed.
func runTests(ctx context.Context, bins map[string]string, ms []mutant.Switch, plans []testPlan, parallel int, out []testResult) {
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Go(func() { out[i] = switchTests(ctx, bins, m, plans[i], sem) })
	}
	wg.Wait()
}

// switchTests runs the tests of m's guarding packages against m, holding
// sem while a binary runs: only those plan names, if it names any, and
// then, if none of them failed, every guarding package in full (a switch
// counts as noticed only by a test that fails in this run).
func switchTests(ctx context.Context, bins map[string]string, m mutant.Switch, plan testPlan, sem chan struct{}) testResult {
	res := testResult{why: plan.why}
	hung := map[string]bool{}
	runAll := func(narrow map[string][]string) {
		res.byPkg = map[string][]string{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, pkg := range m.Tests {
			var only []string
			if narrow != nil {
				if only = narrow[pkg]; len(only) == 0 {
					continue
				}
			}
			wg.Go(func() {
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					return
				}
				defer func() { <-sem }()
				r := packageTests(ctx, bins[pkg], pkg, m.Name, only)
				mu.Lock()
				defer mu.Unlock()
				res.byPkg[pkg] = r.failed
				for _, t := range r.hung {
					hung[qualified(pkg, t)] = true
				}
				res.runs++
				res.took += r.took
				if only != nil {
					res.narrowedRuns++
				}
				if r.err != "" {
					res.err = strings.TrimPrefix(res.err+"; "+r.err, "; ")
				}
			})
		}
		wg.Wait()
	}
	if plan.narrow != nil {
		runAll(plan.narrow)
		noticed := false
		for pkg, tests := range plan.narrow {
			for _, t := range tests {
				if slices.Contains(res.byPkg[pkg], t) {
					noticed = true
				} else {
					res.passed = append(res.passed, qualified(pkg, t))
				}
			}
		}
		if !noticed && res.err == "" && ctx.Err() == nil {
			res.why, res.passed = "the tests the map names all passed", nil
			runAll(nil)
		}
	} else {
		runAll(nil)
	}
	for pkg, tests := range res.byPkg {
		for _, t := range tests {
			res.failed = append(res.failed, qualified(pkg, t))
		}
	}
	slices.Sort(res.failed)
	someFailed := false // some test failed rather than hung
	for i, t := range res.failed {
		if hung[t] {
			res.failed[i] += " (hung)"
		} else {
			someFailed = true
		}
	}
	// The map leaves out a test that hung when another noticed the switch:
	// a narrowed run need not wait out its timeout.
	res.mapped = map[string][]string{}
	for pkg, tests := range res.byPkg {
		res.mapped[pkg] = slices.DeleteFunc(slices.Clone(tests), func(t string) bool {
			return someFailed && hung[qualified(pkg, t)]
		})
	}
	slices.Sort(res.passed)
	return res
}

// qualified names test t of pkg as the table does: bare in the kernel,
// with its package elsewhere.
func qualified(pkg, t string) string {
	if rel := relPkg(pkg); rel != "kernel" {
		return rel + "." + t
	}
	return t
}

// pkgResult is what one test binary's run showed: the top-level tests
// that failed (bare names, a hung one too), those that hung, an error
// when the binary failed with no test failing, and how long it took.
type pkgResult struct {
	failed []string
	hung   []string
	err    string
	took   time.Duration
}

// packageTests runs the tests of pkg (binary bin) against mutation name:
// those named in only, or all of them when only is empty.
func packageTests(ctx context.Context, bin, pkg, name string, only []string) pkgResult {
	args := []string{"-test.count=1", "-test.timeout=" + testTimeout.String()}
	if len(only) > 0 {
		args = append(args, "-test.run", runPattern(only))
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = packageDir(pkg) // the tests read testdata and source files
	cmd.Env = append(os.Environ(), "BK_MUTATE="+name)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	start := time.Now()
	err := cmd.Run()
	res := pkgResult{failed: []string{}, took: time.Since(start)}
	sc := bufio.NewScanner(&buf)
	sc.Buffer(nil, 1<<20)
	// A test that hangs against a mutant noticed it too: the binary's
	// timeout panic names the tests still running.
	timedOut := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "--- FAIL: "):
			res.failed = append(res.failed, strings.Fields(strings.TrimPrefix(line, "--- FAIL: "))[0])
		case strings.HasPrefix(line, "panic: test timed out"):
			timedOut = true
		case timedOut && strings.HasPrefix(line, "\t\tTest"):
			// A subtest is named by its top-level test, which -test.run
			// selects.
			top, _, _ := strings.Cut(strings.Fields(line)[0], "/")
			res.failed = append(res.failed, top)
			res.hung = append(res.hung, top)
		case timedOut && line == "":
			timedOut = false
		}
	}
	slices.Sort(res.failed)
	res.failed = slices.Compact(res.failed)
	slices.Sort(res.hung)
	res.hung = slices.Compact(res.hung)
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && len(res.failed) > 0:
	default:
		res.err = fmt.Sprintf("%s: %v: %s", relPkg(pkg), err, lastLines(buf.String(), 5))
	}
	return res
}

// testTimeout bounds one test binary's run against a mutant: a test that
// hangs without its check counts as noticing it, after this long.
const testTimeout = 3 * time.Minute

// modulePath is the import path of the module's root.
const modulePath = "github.com/blackboardkernel/bk"

// moduleRoot is the directory of go.mod, found from the working directory.
func moduleRoot() string {
	dir, _ := os.Getwd()
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}
