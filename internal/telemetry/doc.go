// Package telemetry holds what the kernel, the tool-call gate and the
// orchestrator share about OpenTelemetry: whether the global provider is
// still the default no-op, and a span start that costs nothing when
// tracing is off.
package telemetry
