// Package ramp holds the one curve that turns a used fraction into
// pressure, shared by package budget's snapshot and the orchestrator's
// functional state (internal/pressure).
//
// Of is a pure function: safe for concurrent use.
package ramp
