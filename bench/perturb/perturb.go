package perturb

import (
	"crypto/md5"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Fault suffixes, appended to the key as ":" + suffix (REPRODUCTION.md §1).
const (
	SuffixDrop          = "drop"
	SuffixStale         = "stale"
	SuffixConflict      = "conflict"
	SuffixLowConfidence = "low_conf"
)

// ErrInvalidRate is wrapped by the error [Rates.Validate] returns for a rate
// that is not a number in [0,1].
var ErrInvalidRate = errors.New("perturb: invalid rate")

// Uniform returns the double in [0,1) that the reference implementation
// draws for (seed, key): h = MD5("<seed>:<key>") read as a big-endian
// integer mod 2^32, then random.Random(h).random().
func Uniform(seed int, key string) float64 {
	var buf [128]byte
	msg := strconv.AppendInt(buf[:0], int64(seed), 10)
	msg = append(msg, ':')
	msg = append(msg, key...)
	sum := md5.Sum(msg)
	h := binary.BigEndian.Uint32(sum[12:]) // the low 32 bits of the 128-bit integer
	var m mt
	m.initByArray([]uint32{h}) // CPython seeds 0 with the key [0] too
	return m.firstFloat64()
}

// Rates are the probabilities of each fault. The zero value injects none;
// [DefaultRates] are the paper's.
type Rates struct {
	Drop          float64 // the tool returns nothing
	Stale         float64 // the observation is flagged stale
	Conflict      float64 // sources disagree
	LowConfidence float64 // the source flags it unreliable (confidence 0.3)
}

// DefaultRates returns the paper's rates: drop 0.05, stale, conflict and
// low confidence 0.10 each.
func DefaultRates() Rates {
	return Rates{Drop: 0.05, Stale: 0.10, Conflict: 0.10, LowConfidence: 0.10}
}

// Validate returns an error wrapping [ErrInvalidRate] if a rate is not a
// number in [0,1].
func (r Rates) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"drop", r.Drop}, {"stale", r.Stale}, {"conflict", r.Conflict}, {"low confidence", r.LowConfidence}} {
		if math.IsNaN(f.v) || f.v < 0 || f.v > 1 {
			return fmt.Errorf("%w: %s rate %v is outside [0,1]", ErrInvalidRate, f.name, f.v)
		}
	}
	return nil
}

// Flags are the faults one observation suffers. When Drop is set the tool
// returned nothing and the other flags are not drawn.
type Flags struct {
	Drop          bool
	Stale         bool
	Conflict      bool
	LowConfidence bool
}

// Draw returns the faults for (seed, key), drawn in the paper's order: a
// flag for suffix S is Uniform(seed, key+":"+S) < rate.
func (r Rates) Draw(seed int, key string) Flags {
	flag := func(suffix string, rate float64) bool { return Uniform(seed, key+":"+suffix) < rate }
	if flag(SuffixDrop, r.Drop) {
		return Flags{Drop: true}
	}
	return Flags{
		Stale:         flag(SuffixStale, r.Stale),
		Conflict:      flag(SuffixConflict, r.Conflict),
		LowConfidence: flag(SuffixLowConfidence, r.LowConfidence),
	}
}
