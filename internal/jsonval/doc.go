// Package jsonval reads JSON values as the kernel's pipeline does: their
// truth value and their number. It serves the record vocabulary and the
// packages above it, so no exported name of theirs exists only for that.
// Its functions hold no state and are safe for concurrent use.
package jsonval
