// Package perturb decides, deterministically and bit for bit as the paper's
// reference implementation does, which faults a tool observation suffers in
// the benchmark (docs/reproduction.md §1).
//
// A fault is drawn from [Uniform]: the MD5 of "<seed>:<key>" seeds a
// CPython-compatible MT19937 generator (random.Random(h), that is
// init_by_array with the one-word key [h]) and two of its tempered outputs
// make one 53-bit double, exactly as CPython's random() builds it. [Rates]
// holds the probability of each fault and [Rates.Draw] returns the [Flags]
// one (seed, key) pair gets, checking the faults in the paper's order: drop,
// stale, conflict, low confidence. [Rates.DrawMany] draws many pairs into
// one slice.
//
// # Concurrency
//
// Every function is pure and safe for concurrent use; a [Rates] value is
// never modified.
package perturb
