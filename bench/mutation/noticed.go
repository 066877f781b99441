//go:build bkmutate

package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/blackboardkernel/bk/internal/mutant"
)

// The map of what noticed each switch (noticed.txt, beside this file) lets
// the default run skip the tests that cannot tell: for each switch and each
// package that guards it, the top-level tests that failed against the
// mutant in the last full run (`make mutation-full`). The default run runs
// only those, with -test.run; the map only chooses what runs, it never
// counts as noticing: a switch is noticed when a test fails against it in
// this run. When the map cannot be trusted for a switch (the switch is not
// in it, the packages that guard the switch changed, a test it names no
// longer exists, or the tests it names all pass), that switch's guarding
// packages run in full, as in a full run.

// noticeFile is the map's path, relative to the module's root.
const noticeFile = "bench/mutation/noticed.txt"

// noticeMap is, by switch name and then by guarding package (an import
// path), the top-level tests that failed against the switch; an empty list
// for a package that ran and noticed nothing.
type noticeMap map[string]map[string][]string

// testName is what a top-level test, example or fuzz target is called.
var testName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// readNoticeMap reads the map at path. A missing file is an empty map
// (every switch then runs in full); a malformed one is an error naming its
// line.
func readNoticeMap(path string) (noticeMap, error) {
	nm := noticeMap{}
	src, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nm, nil
	}
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 3 || f[0] == "" || f[1] == "" || f[2] == "" {
			return nil, fmt.Errorf("%s:%d: want switch, package and tests (or -) separated by tabs", path, n)
		}
		pkg := modulePath + "/" + f[1]
		if nm[f[0]] == nil {
			nm[f[0]] = map[string][]string{}
		}
		if _, dup := nm[f[0]][pkg]; dup {
			return nil, fmt.Errorf("%s:%d: switch %s, package %s listed twice", path, n, f[0], f[1])
		}
		tests := []string{}
		if f[2] != "-" {
			tests = strings.Split(f[2], " ")
		}
		for _, t := range tests {
			if !testName.MatchString(t) {
				return nil, fmt.Errorf("%s:%d: %q is not a test's name", path, n, t)
			}
		}
		nm[f[0]][pkg] = tests
	}
	return nm, sc.Err()
}

// writeNoticeMap writes nm to path, sorted by switch, package and test, so
// that a run that noticed the same writes the same bytes.
func writeNoticeMap(path string, nm noticeMap) error {
	var b strings.Builder
	b.WriteString("# What noticed each mutation switch in the last full run (make mutation-full\n" +
		"# writes it; make mutation reads it to run only these tests, and runs a\n" +
		"# switch's guarding packages in full when this file is stale for it).\n" +
		"# switch<TAB>package<TAB>the top-level tests that failed, or - for none\n")
	for _, name := range sortedKeys(nm) {
		for _, pkg := range sortedKeys(nm[name]) {
			tests := slices.Sorted(slices.Values(nm[name][pkg]))
			tests = slices.Compact(tests)
			cell := strings.Join(tests, " ")
			if cell == "" {
				cell = "-"
			}
			fmt.Fprintf(&b, "%s\t%s\t%s\n", name, strings.TrimPrefix(pkg, modulePath+"/"), cell)
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// narrowed returns, for switch m, the tests of each guarding package that
// the map says noticed it (a package absent from the result need not run),
// or why the map cannot be used for m. listed holds, by package, the
// top-level tests its binary has now (-test.list).
func (nm noticeMap) narrowed(m mutant.Switch, listed map[string]map[string]bool) (map[string][]string, string) {
	entry, ok := nm[m.Name]
	if !ok {
		return nil, "not in the map"
	}
	if !slices.Equal(slices.Sorted(slices.Values(m.Tests)), sortedKeys(entry)) {
		return nil, "its guarding packages changed"
	}
	out := map[string][]string{}
	for pkg, tests := range entry {
		for _, t := range tests {
			if !listed[pkg][t] {
				return nil, fmt.Sprintf("%s has no test %s", relPkg(pkg), t)
			}
		}
		if len(tests) > 0 {
			out[pkg] = tests
		}
	}
	if len(out) == 0 {
		return nil, "no test noticed it when the map was written"
	}
	return out, ""
}

// stale lists the map's entries for switches that no longer exist.
func (nm noticeMap) stale(all []mutant.Switch) []string {
	var out []string
	for _, name := range sortedKeys(nm) {
		if !slices.ContainsFunc(all, func(m mutant.Switch) bool { return m.Name == name }) {
			out = append(out, name)
		}
	}
	return out
}

// relPkg is pkg relative to the module's root.
func relPkg(pkg string) string {
	return strings.TrimPrefix(strings.TrimPrefix(pkg, modulePath), "/")
}

// runPattern is the -test.run pattern that runs exactly tests (top-level
// names; their subtests run too).
func runPattern(tests []string) string {
	return "^(" + strings.Join(tests, "|") + ")$"
}
