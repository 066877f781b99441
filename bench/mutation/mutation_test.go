//go:build bkmutate

package main

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/bench/study"
	"github.com/blackboardkernel/bk/internal/mutant"
)

// The fast part of `make mutation` (make mutation-fast, a quick check):
// for every check of the gate, adversarial_bk against the kernel without
// it. The hardened kernel must hold against every attack, some attack must
// notice each missing check, and every attack must win against the kernel
// missing its target. (The kernel's own tests against each mutant run only
// in make mutation, which plays these attacks too, with more seeds, and
// judges them with the same gaps: so make test leaves this test out.)
func TestEveryCheckIsCaught(t *testing.T) {
	ctx := context.Background()
	seeds := 44
	if testing.Short() {
		seeds = 22
	}
	base, err := playAdversary(ctx, "", seeds)
	if err != nil {
		t.Fatal(err)
	}
	var rows []row
	byTarget := map[string]outcome{}
	for _, m := range mutant.All() {
		if !m.Adversary {
			continue // judged by its tests, in make mutation
		}
		o, err := playAdversary(ctx, m.Name, seeds)
		if err != nil {
			t.Fatal(err)
		}
		r := row{m: m}
		r.judge(o)
		rows = append(rows, r)
		byTarget[m.Name] = o
	}
	for _, g := range gaps(base, rows, byTarget, false) {
		t.Error(g)
	}
	var b strings.Builder
	printChecks(&b, rows, false, false)
	t.Logf("\n%s", b.String())
}

// Every attack targets a check the kernel has a switch for.
func TestTargetsAreChecks(t *testing.T) {
	for _, a := range study.Catalogue() {
		if _, err := selected(mutant.All(), []string{a.Target}); err != nil {
			t.Errorf("attack %s: %v", a.Name, err)
		}
	}
	if _, err := selected(mutant.All(), []string{"no_such_check"}); err == nil {
		t.Error("an unknown switch was accepted")
	}
}

// The switches are off unless one is named, Set refuses a name it does not
// know, and every switch, the nested modules' too, is documented and
// guarded by some package's tests.
func TestMutate(t *testing.T) {
	if err := mutant.Set("no_such_check"); err == nil {
		t.Error("Set accepted an unknown name")
	}
	if err := mutant.Set(""); err != nil {
		t.Fatal(err)
	}
	all, err := everySwitch(moduleRoot())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range all {
		if len(m.Tests) == 0 || m.Package == "" {
			t.Errorf("switch %q has no package", m.Name)
		}
		if seen[m.Name] || m.Check == "" {
			t.Errorf("switch %q listed twice or undocumented", m.Name)
		}
		seen[m.Name] = true
	}
}

// Every package that registers switches is linked into the runner
// (packages.go): a switch left out would be a check nobody runs.
func TestEveryPackageLinked(t *testing.T) {
	linked := map[string]bool{}
	for _, m := range mutant.All() {
		linked[m.Package] = true
	}
	re := regexp.MustCompile(`mutant\.Register\("([^"]+)"`)
	root := moduleRoot()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root {
			// Another module (an adapter beside the core, with its own
			// dependencies) cannot be linked into the runner: its switches
			// are read from its source (TestNestedSwitches).
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range re.FindAllSubmatch(src, -1) {
			if pkg := string(m[1]); !linked[pkg] && !strings.Contains(path, "internal/mutant") {
				t.Errorf("%s registers switches for %s, which the runner does not link", path, pkg)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The switches of the modules nested in the tree are found in their
// source, every module that registers one is covered, and each is run by
// its own module's tests: adk.forged_confirmation among them.
func TestNestedSwitches(t *testing.T) {
	root := moduleRoot()
	nested, err := nestedSwitches(root)
	if err != nil {
		t.Fatal(err)
	}
	byPkg := map[string]bool{}
	for _, s := range nested {
		byPkg[s.Package] = true
		if s.Adversary || len(s.Tests) == 0 || s.Tests[0] != s.Package {
			t.Errorf("switch %s: %+v, want one judged by its own package's tests", s.Name, s)
		}
		if d := moduleDir(packageDir(s.Package)); d == root {
			t.Errorf("switch %s of %s is the core module's", s.Name, s.Package)
		}
	}
	i := slices.IndexFunc(nested, func(s mutant.Switch) bool { return s.Name == "adk.forged_confirmation" })
	if i < 0 || nested[i].Package != modulePath+"/adapters/adk" || nested[i].Check == "" {
		t.Fatalf("adk.forged_confirmation not found among %+v", nested)
	}
	// Every nested file that registers switches is read.
	re := regexp.MustCompile(`mutant\.Register\("([^"]+)"`)
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || moduleDir(filepath.Dir(path)) == root {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range re.FindAllSubmatch(src, -1) {
			if !byPkg[string(m[1])] {
				t.Errorf("%s registers switches for %s, which the runner does not find", path, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A Register call the runner cannot read is an error, not a switch
// skipped. (The space after "Register(" keeps this source out of
// TestEveryPackageLinked's scan.)
func TestNestedSwitchesUnreadable(t *testing.T) {
	dir := t.TempDir()
	src := `package x

import "github.com/blackboardkernel/bk/internal/mutant"

var on bool

func init() { mutant.Register( "x", mutant.Def{Name: name(), Check: "c", On: &on}) }

func name() string { return "x.n" }
`
	path := filepath.Join(dir, "mutate.go")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := registered(path); err == nil || !strings.Contains(err.Error(), "Name") {
		t.Fatalf("registered: %+v, %v; want an error naming the Name", got, err)
	}
	good := strings.Replace(src, "name()", `"x." + "n"`, 1)
	if err := os.WriteFile(path, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := registered(path)
	if err != nil || len(got) != 1 || got[0].Name != "x.n" || got[0].Package != "x" || got[0].Check != "c" {
		t.Fatalf("registered: %+v, %v", got, err)
	}
}

// The map of what noticed each switch, as the repository holds it, reads
// (a malformed map would send every switch to a full run), and is as the
// full run writes it: sorted, so that a run that noticed the same leaves
// it byte for byte.
func TestNoticeMapReads(t *testing.T) {
	path := filepath.Join(moduleRoot(), noticeFile)
	nm, err := readNoticeMap(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(nm) == 0 {
		t.Fatalf("%s is missing or empty: make mutation-full writes it", noticeFile)
	}
	again := filepath.Join(t.TempDir(), "noticed.txt")
	if err := writeNoticeMap(again, nm); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(path)
	got, _ := os.ReadFile(again)
	if string(got) != string(want) {
		t.Errorf("%s is not as make mutation-full writes it (sorted, tab-separated)", noticeFile)
	}
}

// The map narrows a switch's tests only while it is current for that
// switch; otherwise the switch's guarding packages run in full, and the
// reason is given.
func TestNoticeMapStale(t *testing.T) {
	kernel, gate := modulePath+"/kernel", modulePath+"/toolgate"
	src := "# a comment\n" +
		"a\tkernel\tTestA FuzzB\n" +
		"a\ttoolgate\t-\n" +
		"b\tkernel\tTestGone\n" +
		"c\tkernel\t-\n" +
		"d\tkernel\tTestA\n" +
		"gone\tkernel\tTestA\n"
	path := filepath.Join(t.TempDir(), "noticed.txt")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	nm, err := readNoticeMap(path)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]map[string]bool{kernel: {"TestA": true, "FuzzB": true}, gate: {"TestC": true}}
	sw := func(name string, tests ...string) mutant.Switch {
		return mutant.Switch{Name: name, Package: tests[0], Tests: tests}
	}
	narrow, why := nm.narrowed(sw("a", kernel, gate), listed)
	if why != "" || len(narrow) != 1 || !slices.Equal(narrow[kernel], []string{"TestA", "FuzzB"}) {
		t.Errorf("a: %v, %q; want kernel's TestA and FuzzB only", narrow, why)
	}
	for _, c := range []struct {
		m    mutant.Switch
		want string
	}{
		{sw("a", kernel), "guarding packages changed"},
		{sw("b", kernel), "no test TestGone"},
		{sw("c", kernel), "no test noticed it"},
		{sw("d", kernel, gate), "guarding packages changed"},
		{sw("new", kernel), "not in the map"},
	} {
		if narrow, why := nm.narrowed(c.m, listed); narrow != nil || !strings.Contains(why, c.want) {
			t.Errorf("%s: %v, %q; want no narrowing, because %s", c.m.Name, narrow, why, c.want)
		}
	}
	if gone := nm.stale([]mutant.Switch{sw("a", kernel), sw("b", kernel), sw("c", kernel), sw("d", kernel)}); !slices.Equal(gone, []string{"gone"}) {
		t.Errorf("stale: %v, want [gone]", gone)
	}
	if p := runPattern([]string{"TestA", "FuzzB"}); !regexp.MustCompile(p).MatchString("FuzzB") || regexp.MustCompile(p).MatchString("TestAB") {
		t.Errorf("runPattern: %s", p)
	}
	for _, bad := range []string{"a\tkernel\n", "a\tkernel\tTest(A)\n", "a\tkernel\tTestA\na\tkernel\tTestB\n"} {
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := readNoticeMap(path); err == nil {
			t.Errorf("%q was read", bad)
		}
	}
}
