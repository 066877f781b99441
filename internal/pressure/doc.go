// Package pressure measures a run's functional state ([budget.State]):
// the pressures the orchestrator records with each round and shows to
// the workers. It is internal because the orchestrator is its one caller;
// the formulas are documented in package budget, beside the State they
// fill.
//
// Measure is a pure function of its input: safe for concurrent use.
package pressure
