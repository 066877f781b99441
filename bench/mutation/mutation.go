//go:build bkmutate

package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/blackboardkernel/bk/bench/study"
	"github.com/blackboardkernel/bk/internal/mutant"
)

// outcome is what the adversarial row showed against one kernel: the
// attack statistics of the run, by attack name.
type outcome map[string]study.AttackStats

// playAdversary runs adversarial_bk with seeds seeds per task against the
// kernel with mutation name switched on ("" for none), in this process.
func playAdversary(ctx context.Context, name string, seeds int) (outcome, error) {
	if err := mutant.Set(name); err != nil {
		return nil, err
	}
	defer mutant.Set("")
	cfg := study.DefaultConfig()
	cfg.Agents = []string{study.AgentAdversarialBK}
	cfg.Seeds = seeds
	sum, err := study.Run(ctx, cfg, nil) // no JSON lines: a mutant's records need not encode
	if err != nil {
		return nil, fmt.Errorf("mutation %q: %w", name, err)
	}
	out := outcome{}
	for _, s := range sum.Attacks() {
		out[s.Name] = s
	}
	return out, nil
}

// failure says how an attack failed the adversarial row against a kernel,
// or "" when it did not: unsafe refunds first, then the other failures the
// harness measures.
func failure(s study.AttackStats) string {
	var parts []string
	for _, f := range []struct {
		n    int
		what string
	}{
		{s.Unsafe, "unsafe"},
		{s.Accepted, "accepted"},
		{s.Hidden, "hidden"},
		{s.Unsupported, "unsupported"},
		{s.Failed, "failed"},
	} {
		if f.n > 0 {
			parts = append(parts, f.what+" "+strconv.Itoa(f.n))
		}
	}
	return strings.Join(parts, ", ")
}

// row is one check of the mutation table.
type row struct {
	m mutant.Switch
	// unsafe are the attacks that ended in unsafe refunds, other those
	// that failed the row otherwise (accepted hostile writes, hidden
	// effects, unsupported beliefs, metrics short of 1).
	unsafe, other []string
	// tests are the tests that failed (package-qualified outside the
	// kernel); testErr is set when a test binary could not be run at all.
	tests   []string
	testErr string
}

// caught reports whether some attack or test noticed the missing check.
func (r *row) caught() bool { return len(r.unsafe)+len(r.other)+len(r.tests) > 0 }

// judge fills the attack columns of r from the outcome against its mutant.
func (r *row) judge(o outcome) {
	for _, name := range study.AttackNames() {
		s, ok := o[name]
		if !ok {
			continue
		}
		switch {
		case s.Unsafe > 0:
			r.unsafe = append(r.unsafe, fmt.Sprintf("%s %d/%d", name, s.Unsafe, s.Episodes))
		case failure(s) != "":
			r.other = append(r.other, fmt.Sprintf("%s (%s)", name, failure(s)))
		}
	}
}

// gaps lists what makes the mutation test fail: a baseline run that is
// not clean, a check no attack or test catches, and an attack that does
// not fail against the kernel missing the check it targets. Rows whose
// tests did not run and that the adversary is not played against are not
// judged.
func gaps(base outcome, rows []row, byTarget map[string]outcome, tests bool) []string {
	var out []string
	for _, name := range study.AttackNames() {
		if f := failure(base[name]); f != "" {
			out = append(out, fmt.Sprintf("attack %s fails against the hardened kernel: %s", name, f))
		}
	}
	for _, r := range rows {
		if !tests && !r.m.Adversary {
			continue
		}
		if !r.caught() {
			out = append(out, fmt.Sprintf("check %s: no attack or test notices it missing", r.m.Name))
		}
	}
	for _, a := range study.Catalogue() {
		o, ok := byTarget[a.Target]
		if !ok {
			continue // its target was not run
		}
		if failure(o[a.Name]) == "" {
			out = append(out, fmt.Sprintf("attack %s does not win against a kernel without %s", a.Name, a.Target))
		}
	}
	return out
}

// selected returns the switches of all named in only (all for none), or
// an error naming an unknown one.
func selected(all []mutant.Switch, only []string) ([]mutant.Switch, error) {
	if len(only) == 0 {
		return all, nil
	}
	var out []mutant.Switch
	for _, name := range only {
		i := slices.IndexFunc(all, func(m mutant.Switch) bool { return m.Name == name })
		if i < 0 {
			names := make([]string, len(all))
			for j, m := range all {
				names[j] = m.Name
			}
			return nil, fmt.Errorf("no mutation %q (valid: %s)", name, strings.Join(names, ", "))
		}
		out = append(out, all[i])
	}
	return out, nil
}
