// Package chain makes a store's history checkable: every change to a
// trace — a record appended, a record's status changed — is a link of that
// trace's hash chain, and a signed checkpoint vouches for where chains
// stood. It needs no store: a verifier given a trace's events (from a
// store, or from an evidence [Bundle]) and a public key recomputes every
// link itself.
//
// # The chain
//
// A trace's events are numbered from 0 in the order they happened. Event
// n's link is
//
//	SHA-256("bk.chain.link.v1\n" ‖ link(n-1) ‖ n as 8 bytes, big-endian ‖ digest(n))
//
// with link(-1) 32 zero bytes, and digest(n) the SHA-256 of the event's
// content ([AppendDigest], [TransitionDigest]): for an append, every
// field of the record — its namespace, trace and id among them — with the
// payload in its canonical form (canon.AppendBinary, so a number spelled
// two ways digests alike); for a status change, the record id, the new
// status and its reason. A link commits to the event's content, its position and every
// event before it, so a changed field, a deleted or reordered event, or a
// record moved from another trace breaks the link of that event or the
// next. Traces are chained apart: no append waits for another trace's.
//
// A chain alone cannot tell a trace whose tail was cut and whose head was
// rewritten to match from a shorter trace. A [Checkpoint] can: it lists
// the heads ([Head]) of the traces written since the previous checkpoint,
// commits to that previous checkpoint, and is signed with an Ed25519 key.
// A trace whose chain does not reach the head a trusted checkpoint names —
// shorter, rewritten, or gone — is caught from that checkpoint.
//
// An evidence [Bundle] holds one trace's events (and its policy trace's)
// with the checkpoints that name them; [VerifyBundle] checks it with the
// public key alone.
//
// # Concurrency
//
// Every function is pure and safe for concurrent use; a [Walker] is used
// by one goroutine at a time.
package chain
