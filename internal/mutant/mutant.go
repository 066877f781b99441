//go:build bkmutate

package mutant

import (
	"fmt"
	"os"
	"slices"
	"sync"
)

// Switch is one mutation switch: the check it disables, the package that
// owns it, and the packages whose tests are expected to notice.
type Switch struct {
	Name  string
	Check string
	// Package is the import path of the package that owns the check.
	Package string
	// Tests are the import paths whose tests run against the mutant: the
	// owning package, and any other package whose attack tests guard it.
	Tests []string
	// Adversary is true for the checks the study's adversary is played
	// against (the kernel's, unless declared ByTests).
	Adversary bool
	on        *bool
}

// Def declares a switch to [Register].
type Def struct {
	Name  string
	Check string
	On    *bool
	// Also names packages beside the owner whose tests guard the check.
	Also []string
	// ByTests marks a kernel check that the study's adversary cannot
	// reach (it is not a planner's move): only tests judge it.
	ByTests bool
}

// kernelPkg is the package whose checks the adversary is played against.
const kernelPkg = "github.com/blackboardkernel/bk/kernel"

var (
	mu       sync.Mutex
	switches []Switch
)

// Register adds the switches of package pkg (an import path), in the order
// its checks run. A name registered twice panics: names must be unique.
// The switch BK_MUTATE names starts on.
func Register(pkg string, defs ...Def) {
	mu.Lock()
	defer mu.Unlock()
	env := os.Getenv("BK_MUTATE")
	for _, d := range defs {
		if slices.ContainsFunc(switches, func(s Switch) bool { return s.Name == d.Name }) {
			panic("mutant: switch " + d.Name + " registered twice")
		}
		*d.On = d.Name == env
		switches = append(switches, Switch{Name: d.Name, Check: d.Check, Package: pkg,
			Tests: append([]string{pkg}, d.Also...), Adversary: pkg == kernelPkg && !d.ByTests, on: d.On})
	}
}

// All returns every registered switch, in registration order.
func All() []Switch {
	mu.Lock()
	defer mu.Unlock()
	out := slices.Clone(switches)
	for i := range out {
		out[i].on = nil
		out[i].Tests = slices.Clone(out[i].Tests)
	}
	return out
}

// Set turns on the named switch and every other off; "" turns all off. It
// must not run while a checked operation is in flight. An unknown name is
// an error.
func Set(name string) error {
	mu.Lock()
	defer mu.Unlock()
	found := name == ""
	for _, s := range switches {
		*s.on = s.Name == name
		found = found || s.Name == name
	}
	if !found {
		return fmt.Errorf("mutant: no switch %q", name)
	}
	return nil
}

// On reports whether the named switch is on. A package whose check answers
// to another package's switch (the memory store's part of a kernel check)
// asks here; an unknown name is off.
func On(name string) bool {
	mu.Lock()
	defer mu.Unlock()
	for _, s := range switches {
		if s.Name == name {
			return *s.on
		}
	}
	return false
}
