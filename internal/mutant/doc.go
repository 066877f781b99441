// Package mutant is the registry of mutation switches: in a build with the
// bkmutate tag, each package that has checks worth proving load-bearing
// declares one boolean per check and registers it here; turning a switch on
// disables its check, and `make mutation` shows which attacks and tests
// notice. In the default build the package is empty and every switch is a
// false constant in its own package, so the checks cost nothing.
//
// The environment variable BK_MUTATE names the switch a process starts
// with; [Set] changes it in-process. Switch names are unique across the
// module: the kernel's are bare ("stale"), every other package's carry its
// name ("toolgate.lease_margin").
package mutant
