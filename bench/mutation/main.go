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
//	go run -tags bkmutate ./bench/mutation -tests=false -only stale,recheck
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
	"path/filepath"
	"slices"
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
	all, err := everySwitch(moduleRoot())
	if err != nil {
		return err
	}
	ms, err := selected(all, names)
	if err != nil {
		return err
	}
	start := time.Now()

	var testResults []testResult
	var testsDone sync.WaitGroup
	if *tests {
		bins, cleanup, err := buildTests(ctx, ms)
		if err != nil {
			return err
		}
		defer cleanup()
		testResults = make([]testResult, len(ms))
		testsDone.Go(func() { runTests(ctx, bins, ms, *parallel, testResults) })
	}

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
	fmt.Fprintf(stdout, "\n%d checks, %d attacks, %d seeds per task; %s\n", len(ms), len(study.AttackNames()), *seeds,
		time.Since(start).Round(100*time.Millisecond))
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(stdout, "GAP:", p)
		}
		return fmt.Errorf("%d gaps", len(problems))
	}
	fmt.Fprintln(stdout, "every check is noticed by an attack or a test, and every attack wins against the kernel missing its target")
	return nil
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
	failed []string
	err    string
}

// buildTests compiles, with the bkmutate tag, the tests of every package
// that guards one of ms, and returns the binaries by import path. A
// package of a nested module (an adapter) is built in its module.
func buildTests(ctx context.Context, ms []mutant.Switch) (map[string]string, func(), error) {
	dir, err := os.MkdirTemp("", "bkmutate-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	bins := map[string]string{}
	for _, m := range ms {
		for _, pkg := range m.Tests {
			if _, ok := bins[pkg]; ok {
				continue
			}
			bin := filepath.Join(dir, fmt.Sprintf("%d.test", len(bins)))
			cmd := exec.CommandContext(ctx, "go", "test", "-c", "-tags", "bkmutate", "-o", bin, pkg)
			cmd.Dir = moduleDir(packageDir(pkg))
			if out, err := cmd.CombinedOutput(); err != nil {
				cleanup()
				return nil, nil, fmt.Errorf("building the tests of %s: %v\n%s", pkg, err, out)
			}
			bins[pkg] = bin
		}
	}
	return bins, cleanup, nil
}

// runTests runs, for each switch, the test binaries of the packages that
// guard it, parallel at a time, and records the top-level tests that
// failed.
func runTests(ctx context.Context, bins map[string]string, ms []mutant.Switch, parallel int, out []testResult) {
	sem := make(chan struct{}, max(parallel, 1))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, m := range ms {
		for _, pkg := range m.Tests {
			wg.Go(func() {
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					return
				}
				defer func() { <-sem }()
				res := packageTests(ctx, bins[pkg], pkg, m.Name)
				mu.Lock()
				defer mu.Unlock()
				out[i].failed = append(out[i].failed, res.failed...)
				if res.err != "" {
					out[i].err = strings.TrimPrefix(out[i].err+"; "+res.err, "; ")
				}
			})
		}
	}
	wg.Wait()
	for i := range out {
		slices.Sort(out[i].failed)
	}
}

// packageTests runs the tests of pkg (binary bin) against mutation name.
// Outside the kernel, failed tests are named with their package.
func packageTests(ctx context.Context, bin, pkg, name string) testResult {
	cmd := exec.CommandContext(ctx, bin, "-test.count=1", "-test.timeout="+testTimeout.String())
	rel := strings.TrimPrefix(strings.TrimPrefix(pkg, modulePath), "/")
	cmd.Dir = packageDir(pkg) // the tests read testdata and source files
	cmd.Env = append(os.Environ(), "BK_MUTATE="+name)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	prefix := ""
	if rel != "kernel" {
		prefix = rel + "."
	}
	var res testResult
	sc := bufio.NewScanner(&buf)
	sc.Buffer(nil, 1<<20)
	// A test that hangs against a mutant noticed it too: the binary's
	// timeout panic names the tests still running.
	timedOut := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "--- FAIL: "):
			res.failed = append(res.failed, prefix+strings.Fields(strings.TrimPrefix(line, "--- FAIL: "))[0])
		case strings.HasPrefix(line, "panic: test timed out"):
			timedOut = true
		case timedOut && strings.HasPrefix(line, "\t\tTest"):
			res.failed = append(res.failed, prefix+strings.Fields(line)[0]+" (hung)")
		case timedOut && line == "":
			timedOut = false
		}
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && len(res.failed) > 0:
	default:
		res.err = fmt.Sprintf("%s: %v: %s", rel, err, lastLines(buf.String(), 5))
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
