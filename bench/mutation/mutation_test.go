//go:build bkmutate

package main

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/bench/study"
	"github.com/blackboardkernel/bk/internal/mutant"
)

// The fast part of `make mutation`, which CI runs: for every check of the
// gate, adversarial_bk against the kernel without it. The hardened kernel
// must hold against every attack, some attack must notice each missing
// check, and every attack must win against the kernel missing its target.
// (The kernel's own tests against each mutant run only in make mutation.)
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
		if _, err := selected([]string{a.Target}); err != nil {
			t.Errorf("attack %s: %v", a.Name, err)
		}
	}
	if _, err := selected([]string{"no_such_check"}); err == nil {
		t.Error("an unknown switch was accepted")
	}
}

// The switches are off unless one is named, Set refuses a name it does not
// know, and every switch is documented and guarded by some package's tests.
func TestMutate(t *testing.T) {
	if err := mutant.Set("no_such_check"); err == nil {
		t.Error("Set accepted an unknown name")
	}
	if err := mutant.Set(""); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range mutant.All() {
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
			// are turned on by BK_MUTATE in its own tests.
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
