package mask

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"

	"github.com/blackboardkernel/bk/canon"
)

// Prefix begins every masked value: "masked:hmac-sha256:" and the
// unpadded URL-safe base64 of HMAC-SHA256, under the mask key of the
// value's trace, of the value's canonical JSON ([Hash]).
const Prefix = "masked:hmac-sha256:"

// MinKey is the shortest mask key accepted, in bytes: a gate's one key
// (toolgate.Config.MaskKey), or a [Keyring]'s key for one trace.
const MinKey = 32

// ErrErased: the trace's mask key was erased ([Keys.Erase]); a gate's
// call in it fails closed and writes nothing, and its stored hashes match
// no value anyone can compute.
var ErrErased = errors.New("mask: the trace's mask key is erased")

// Keyring gives each trace of each namespace its own mask key
// (toolgate.Config.MaskKeys): the same trace id in two namespaces is two
// traces, and has two keys. Key returns the key of traceID in namespace
// ("" is the default namespace; a gate passes its kernel's), at least
// [MinKey] bytes, making and keeping one on a trace's first use; it
// returns an error wrapping [ErrErased] for a trace whose key was erased,
// and never another trace's key (another namespace's included) or a new
// one in its place. A gate uses the key at once and keeps no copy. Key may
// be called concurrently, and must honour ctx's cancellation when it
// blocks. [Keys] is the keyring of this package.
type Keyring interface {
	Key(ctx context.Context, namespace, traceID string) ([]byte, error)
}

// Hash is v's masked form under key: [Prefix] and the HMAC-SHA256 of v's
// canonical JSON. It fails when v is not a JSON value. Equal values give
// equal hashes under one key.
func Hash(key []byte, v any) (string, error) {
	b, err := canon.Encode(v)
	if err != nil {
		return "", err
	}
	mac := hmac.New(sha256.New, key)
	mac.Write(b)
	return Prefix + base64.RawURLEncoding.EncodeToString(mac.Sum(nil)), nil
}

// Masked reports whether v is a masked value: a string that begins with
// [Prefix].
func Masked(v any) bool {
	s, ok := v.(string)
	return ok && strings.HasPrefix(s, Prefix)
}
