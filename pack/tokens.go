package pack

import (
	"strings"
	"sync"

	"github.com/tiktoken-go/tokenizer"
)

// The encodings the compiler counts tokens with.
const (
	EncodingCL100K = "cl100k_base" // GPT-4, GPT-3.5 Turbo
	EncodingO200K  = "o200k_base"  // GPT-4o, GPT-4.1, o-series, GPT-5
)

// counter counts tokens with a real BPE codec, and remembers the counts of
// the units it has seen: across the turns of a run most units (the
// mission, the constraints, the tools, most evidence) repeat, and a BPE
// count costs about a third of a microsecond per token. The cache is
// bounded; when full it starts again empty.
type counter struct {
	codec tokenizer.Codec
	mu    sync.Mutex
	seen  map[string]int
	heads map[headKey]string
	bytes int
}

// headKey names a shortened text: the text and the tokens kept.
type headKey struct {
	text string
	n    int
}

// Bounds of the count cache.
const (
	maxCached      = 1 << 14
	maxCachedBytes = 16 << 20
)

func newCounter(encoding string) (*counter, error) {
	var enc tokenizer.Encoding
	switch encoding {
	case EncodingCL100K:
		enc = tokenizer.Cl100kBase
	case EncodingO200K:
		enc = tokenizer.O200kBase
	default:
		return nil, newErr("new", "", ErrEncoding, "%q (supported: %s, %s)", encoding, EncodingCL100K, EncodingO200K)
	}
	c, err := tokenizer.Get(enc)
	if err != nil {
		return nil, newErr("new", "", ErrEncoding, "%q: %v", encoding, err)
	}
	return &counter{codec: c, seen: make(map[string]int, 256), heads: make(map[headKey]string)}, nil
}

// count returns the number of tokens of s.
func (c *counter) count(s string) (int, error) {
	c.mu.Lock()
	n, ok := c.seen[s]
	c.mu.Unlock()
	if ok {
		return n, nil
	}
	n, err := c.codec.Count(s)
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	c.room(len(s))
	c.seen[s] = n
	c.mu.Unlock()
	return n, nil
}

// room makes room in the caches for size more bytes; c.mu is held.
func (c *counter) room(size int) {
	if len(c.seen)+len(c.heads) >= maxCached || c.bytes+size > maxCachedBytes {
		clear(c.seen)
		clear(c.heads)
		c.bytes = 0
	}
	c.bytes += size
}

// head returns the longest prefix of s, on a token boundary, of at most n
// tokens.
func (c *counter) head(s string, n int) (string, error) {
	if n <= 0 {
		return "", nil
	}
	key := headKey{s, n}
	c.mu.Lock()
	out, ok := c.heads[key]
	c.mu.Unlock()
	if ok {
		return out, nil
	}
	ids, _, err := c.codec.Encode(s)
	if err != nil {
		return "", err
	}
	if len(ids) <= n {
		return s, nil
	}
	if out, err = c.codec.Decode(ids[:n]); err != nil {
		return "", err
	}
	// A token can end inside a multi-byte character: drop the fragment.
	out = strings.ToValidUTF8(out, "")
	c.mu.Lock()
	c.room(len(s) + len(out))
	c.heads[key] = out
	c.mu.Unlock()
	return out, nil
}
