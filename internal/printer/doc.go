// Package printer holds the writer the bench and the examples print their
// reports through: it keeps the first write error, so that a report needs
// one error check, not one per line.
package printer
