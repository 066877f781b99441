// Package validator holds composable checks that a kernel's owner plugs in
// with [kernel.Config.Validators]. They run after the kernel's built-in
// validation (evidence, arbitration, confidence, feasibility, constraints,
// prediction gate) has passed a proposal and before it is committed, and can
// only make the kernel stricter: a check returns "" to let the proposal
// through or a typed [reason.Code] to reject it.
//
// The built-in pipeline is the kernel's core semantics and lives in package
// kernel; this package adds domain limits that are awkward to express as a
// boolean blocks_field: a ceiling on a numeric field ([Max]), fields that
// must be present ([Require]), and scoping a check to one slot and kind
// ([For]).
//
// # Concurrency
//
// Every validator here is immutable after construction and safe for
// concurrent use, as the kernel requires.
package validator
