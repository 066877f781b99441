// Package wait holds the one way this module waits: for a duration or
// until a context is done, whichever comes first. It is safe for
// concurrent use and starts no goroutine.
package wait
