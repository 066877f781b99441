package chain

import (
	"cmp"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/blackboardkernel/bk/blackboard"
)

// ErrKey is returned for a signing key this package cannot use (not
// Ed25519) and for a checkpoint signed by a key the verifier was not
// given.
var ErrKey = errors.New("chain: unusable or unknown key")

// Checkpoint vouches for where the chains of a namespace's traces stood:
// the heads of the traces written since the namespace's previous
// checkpoint, that checkpoint's digest, and the signature of the key
// named by KeyID over all of it ([Checkpoint.Digest]). Checkpoints of a
// namespace form a chain of their own: Seq counts from 1 and Prev is the
// digest of checkpoint Seq-1, so a checkpoint dropped, replayed or put
// out of its place breaks it. A change of KeyID from one checkpoint to
// the next is a key rotation, which the record of checkpoints keeps.
type Checkpoint struct {
	Namespace string `json:"namespace"`
	Seq       uint64 `json:"seq"`
	Prev      Hash   `json:"prev"`
	TimeMS    int64  `json:"ts_ms"`
	// KeyID names the public key that signed it ([KeyID]).
	KeyID string `json:"key_id"`
	// Heads are sorted by trace id, one per trace.
	Heads     []Head `json:"heads"`
	Signature []byte `json:"signature,omitempty"`
}

// Digest returns what the checkpoint's signature signs: every field but
// Signature, framed so that no two checkpoints share it.
func (c *Checkpoint) Digest() Hash {
	var b []byte
	b = append(b, "bk.chain.checkpoint.v1\n"...)
	b = str(b, cmp.Or(c.Namespace, blackboard.DefaultNamespace))
	b = binary.BigEndian.AppendUint64(b, c.Seq)
	b = append(b, c.Prev[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(c.TimeMS))
	b = str(b, c.KeyID)
	b = binary.AppendUvarint(b, uint64(len(c.Heads)))
	for _, h := range c.Heads {
		b = str(b, cmp.Or(h.Namespace, blackboard.DefaultNamespace))
		b = str(b, h.Trace)
		b = binary.BigEndian.AppendUint64(b, h.Len)
		b = append(b, h.Link[:]...)
	}
	return sha256.Sum256(b)
}

// KeyID returns the id of an Ed25519 public key: the first 16 hex digits
// of its SHA-256.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}

// Sign sets the checkpoint's KeyID and Signature with signer, whose
// public key must be Ed25519 (a key in memory, or one a KMS or HSM holds
// behind the [crypto.Signer] interface). It sorts Heads first.
func (c *Checkpoint) Sign(signer crypto.Signer) error {
	pub, ok := signer.Public().(ed25519.PublicKey)
	if !ok {
		return fmt.Errorf("%w: the signer's public key is %T, not ed25519.PublicKey", ErrKey, signer.Public())
	}
	slices.SortFunc(c.Heads, func(a, b Head) int { return cmp.Compare(a.Trace, b.Trace) })
	c.KeyID = KeyID(pub)
	d := c.Digest()
	sig, err := signer.Sign(rand.Reader, d[:], crypto.Hash(0))
	if err != nil {
		return fmt.Errorf("chain: sign checkpoint %d: %w", c.Seq, err)
	}
	c.Signature = sig
	return nil
}

// Verify checks the checkpoint's signature with the key among keys whose
// [KeyID] it names. A checkpoint signed by none of them is [ErrKey]; a
// bad signature is a [*Break] with [FaultCheckpoint].
func (c *Checkpoint) Verify(keys []ed25519.PublicKey) error {
	for _, k := range keys {
		if KeyID(k) != c.KeyID {
			continue
		}
		d := c.Digest()
		if !ed25519.Verify(k, d[:], c.Signature) && !mutSkipSig() {
			return &Break{Namespace: cmp.Or(c.Namespace, blackboard.DefaultNamespace), Seq: c.Seq, Fault: FaultCheckpoint,
				Detail: fmt.Sprintf("checkpoint %d: the signature of key %s does not hold", c.Seq, c.KeyID)}
		}
		return nil
	}
	return fmt.Errorf("%w: checkpoint %d is signed by key %s, which the verifier was not given", ErrKey, c.Seq, c.KeyID)
}

// Follows checks that c comes right after prev in its namespace's
// sequence (prev nil: c is the first): same namespace, the next Seq, and
// Prev equal to prev's digest. A replayed or reordered checkpoint fails,
// as a [*Break] with [FaultCheckpoint].
func (c *Checkpoint) Follows(prev *Checkpoint) error {
	var wantSeq uint64 = 1
	var wantPrev Hash
	if prev != nil {
		wantSeq, wantPrev = prev.Seq+1, prev.Digest()
	}
	if (c.Seq != wantSeq || c.Prev != wantPrev || prev != nil && cmp.Or(prev.Namespace, blackboard.DefaultNamespace) != cmp.Or(c.Namespace, blackboard.DefaultNamespace)) && !mutSkipSeq() {
		return &Break{Namespace: cmp.Or(c.Namespace, blackboard.DefaultNamespace), Seq: c.Seq, Fault: FaultCheckpoint,
			Detail: fmt.Sprintf("checkpoint %d does not follow checkpoint %d (want number %d after digest %s)", c.Seq, wantSeq-1, wantSeq, wantPrev)}
	}
	return nil
}

// Covers returns the head c names for trace traceID of namespace, and
// false when c names none.
func (c *Checkpoint) Covers(namespace, traceID string) (Head, bool) {
	ns := cmp.Or(namespace, blackboard.DefaultNamespace)
	i, ok := slices.BinarySearchFunc(c.Heads, traceID, func(h Head, t string) int { return cmp.Compare(h.Trace, t) })
	if !ok || cmp.Or(c.Heads[i].Namespace, blackboard.DefaultNamespace) != ns {
		return Head{}, false
	}
	return c.Heads[i], true
}
