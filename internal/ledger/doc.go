// Package ledger is where checkpoints (package chain) live in a store,
// and the verification of a whole store's history: every trace's chain,
// the checkpoints' sequence and signatures, and the heads they vouch for.
//
// A kernel given a signing key writes its namespace's checkpoints as
// records of one trace, [Trace], which no handle may write: slot
// evidence, kind [Kind], the checkpoint under the payload key
// "checkpoint". That trace is chained like any other, and each checkpoint
// names its predecessor's digest, so the checkpoints of a namespace are
// one sequence.
//
// Its functions only read and are safe for concurrent use.
package ledger
