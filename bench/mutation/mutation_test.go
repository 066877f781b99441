//go:build bkmutate

package main

import (
	"context"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/bench/study"
	"github.com/blackboardkernel/bk/kernel"
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
	ms := kernel.Mutations()
	rows := make([]row, len(ms))
	byTarget := map[string]outcome{}
	for i, m := range ms {
		o, err := playAdversary(ctx, m.Name, seeds)
		if err != nil {
			t.Fatal(err)
		}
		rows[i].m = m
		rows[i].judge(o)
		byTarget[m.Name] = o
	}
	for _, g := range gaps(base, rows, byTarget) {
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

// The switches are off unless one is named, and Mutate refuses a name it
// does not know.
func TestMutate(t *testing.T) {
	if err := kernel.Mutate("no_such_check"); err == nil {
		t.Error("Mutate accepted an unknown name")
	}
	if err := kernel.Mutate(""); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range kernel.Mutations() {
		if seen[m.Name] || m.Check == "" {
			t.Errorf("switch %q listed twice or undocumented", m.Name)
		}
		seen[m.Name] = true
	}
}
