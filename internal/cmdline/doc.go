// Package cmdline is what every program of the module (bk, the bench, the
// examples) does with its command line, so that they behave alike: -h
// prints the usage to standard output and exits 0; an unknown flag or
// argument prints the error and the usage to standard error and exits 2;
// any other failure exits 1. Its functions are safe for concurrent use on
// different flag sets.
package cmdline
