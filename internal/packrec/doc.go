// Package packrec holds the shapes of a compiled_context record's
// sections and manifests (what package pack writes and internal/inspect
// reads back): one section's share of the window, a record shown as
// evidence or recalled as memory, the run controls shown, and a cut. The
// compiled context's Go surface (pack.Pack) keeps them unexported; the
// record holds them in full.
package packrec
