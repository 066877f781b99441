package perturb

import (
	"crypto/md5"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Fault suffixes, appended to the key as ":" + suffix (docs/reproduction.md §1).
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
	var m mt
	m.initByArray([]uint32{hash(seed, key, "")}) // CPython seeds 0 with the key [0] too
	return m.firstFloat64()
}

// hash is the generator key of (seed, key+suffix): the low 32 bits of
// MD5("<seed>:<key><suffix>") read as a big-endian integer.
func hash(seed int, key, suffix string) uint32 {
	var buf [128]byte
	msg := strconv.AppendInt(buf[:0], int64(seed), 10)
	msg = append(msg, ':')
	msg = append(msg, key...)
	msg = append(msg, suffix...)
	sum := md5.Sum(msg)
	return binary.BigEndian.Uint32(sum[12:]) // the low 32 bits of the 128-bit integer
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
//
// The four generators of a seed are seeded together ([firstFloats]), which
// costs about what seeding one does; the drop is still checked first, and
// a drop leaves the other flags unset.
func (r Rates) Draw(seed int, key string) Flags {
	return r.flags(firstFloats(keysOf(seed, key)))
}

// DrawMany sets dst[i] to r.Draw(seeds[i], keys[i]) for every i; the three
// slices must be as long.
func (r Rates) DrawMany(dst []Flags, seeds []int, keys []string) {
	if len(seeds) != len(dst) || len(keys) != len(dst) {
		panic("perturb: DrawMany with slices of different lengths")
	}
	for i := range dst {
		dst[i] = r.Draw(seeds[i], keys[i])
	}
}

// keysOf is the generator keys of (seed, key)'s four faults, in the
// paper's order.
func keysOf(seed int, key string) [lanes]uint32 {
	return [lanes]uint32{
		hash(seed, key, ":"+SuffixDrop),
		hash(seed, key, ":"+SuffixStale),
		hash(seed, key, ":"+SuffixConflict),
		hash(seed, key, ":"+SuffixLowConfidence),
	}
}

// flags are the faults the four uniforms u of a draw give, checked in the
// paper's order: the drop first, and a drop leaves the other flags unset.
func (r Rates) flags(u [lanes]float64) Flags {
	if u[0] < r.Drop {
		return Flags{Drop: true}
	}
	return Flags{Stale: u[1] < r.Stale, Conflict: u[2] < r.Conflict, LowConfidence: u[3] < r.LowConfidence}
}
