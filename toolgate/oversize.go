package toolgate

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/canon"
	"github.com/blackboardkernel/bk/kernel"
)

// Keys of a refusal's decision record that stand for arguments it does not
// hold: too long to keep (args_raw holds at most maxRawArgs bytes), too
// large for the record, or not stored at all.
const (
	// keyArgsBytes is the size of the arguments in bytes: as the call
	// gave them, or, for parsed arguments, of their canonical JSON.
	keyArgsBytes = "args_bytes"
	// keyArgsRawDigest is "sha256:" and the hex SHA-256 of the raw
	// arguments as the call gave them; never for a tool that masks
	// fields (a plain digest of a masked value can be tested against
	// guesses).
	keyArgsRawDigest = "args_raw_digest"
)

// maxRefusalDetail bounds the detail of a refusal whose record was over
// the store's size limit.
const maxRefusalDetail = 2048

// footprint adds to cc the size of raw arguments not kept, and their
// digest when the tool masks nothing (e nil or without masked fields).
func footprint(cc blackboard.Payload, raw []byte, e *entry) {
	if !oversizeShrunk() {
		return
	}
	cc[keyArgsBytes] = len(raw)
	if e == nil || len(e.Masked) == 0 {
		sum := sha256.Sum256(raw)
		cc[keyArgsRawDigest] = "sha256:" + hex.EncodeToString(sum[:])
	}
}

// shrunk is a refusal's record content that fits the store when the
// first was over its size limit: the parsed arguments give way to their
// size (their digest, args_digest, stays), the raw ones go, and the
// detail is cut. ok is false when there is nothing to shrink, or the
// error is not about size.
func shrunk(err error, detail string, cc blackboard.Payload) (string, blackboard.Payload, bool) {
	if !oversizeShrunk() || !errors.Is(err, kernel.ErrPayloadTooLarge) {
		return "", nil, false
	}
	out := make(blackboard.Payload, len(cc)+1)
	for k, v := range cc {
		switch k {
		case "args":
			if b, err := canon.Encode(v); err == nil {
				out[keyArgsBytes] = len(b)
			}
		case "args_raw":
		default:
			out[k] = v
		}
	}
	return clipText(detail, maxRefusalDetail), out, true
}

// storeProblem words why arguments cannot be stored, without the
// kernel's words, which may quote a value of them.
func storeProblem(err error, size int) string {
	if errors.Is(err, kernel.ErrPayloadTooLarge) {
		return "the arguments (" + strconv.Itoa(size) + " bytes) are over the store's size limit"
	}
	return "the arguments cannot be stored: they are not JSON values the store keeps"
}
