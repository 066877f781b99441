package perturb

import (
	"encoding/binary"
	"math"
	"math/bits"
	"strconv"
)

// md5Lanes is how many one-block messages md5Wide digests at once: one per
// 32-bit lane of an AVX2 register, the four keys of two draws.
const md5Lanes = 8

// md5MaxLen is the longest message that fits one MD5 block with its
// padding (a 0x80 byte and the 8-byte length).
const md5MaxLen = 55

// md5Block holds md5Lanes padded one-block messages, word k of lane l at
// [k][l], so that one vector load reads word k of every message.
type md5Block [16][md5Lanes]uint32

// md5T is RFC 1321's table, T[i] = floor(abs(sin(i+1)) * 2^32), each word
// repeated in every lane so that the assembly adds it in one instruction.
// (A double's sine is exact enough here: the tests compare every step's
// result with crypto/md5.)
var md5T = func() (t [64][md5Lanes]uint32) {
	for i := range t {
		w := uint32(math.Floor(math.Abs(math.Sin(float64(i+1))) * (1 << 32)))
		for l := range t[i] {
			t[i][l] = w
		}
	}
	return t
}()

// set writes msg, at most md5MaxLen bytes, padded as MD5 pads it, into
// lane l.
func (b *md5Block) set(l int, msg []byte) {
	var buf [64]byte
	copy(buf[:], msg)
	buf[len(msg)] = 0x80
	binary.LittleEndian.PutUint64(buf[56:], uint64(len(msg))*8)
	for k := range b {
		b[k][l] = binary.LittleEndian.Uint32(buf[4*k:])
	}
}

// suffixes are the four faults' suffixes, in the paper's order, as keysOf
// appends them.
var suffixes = [lanes]string{":" + SuffixDrop, ":" + SuffixStale, ":" + SuffixConflict, ":" + SuffixLowConfidence}

// longestSuffix is the length of the longest of suffixes.
var longestSuffix = func() (n int) {
	for _, s := range suffixes {
		n = max(n, len(s))
	}
	return n
}()

// keysWide sets h[d*lanes:] to keysOf(seeds[d], keys[d]) for the one or two
// draws given, hashing their eight messages side by side (md5Wide). A draw
// whose longest message needs a second block is hashed by keysOf.
func keysWide(h []uint32, seeds []int, keys []string) {
	var x md5Block // an absent draw's lanes hash empty blocks, never read
	var wide [2]bool
	for d := range seeds {
		var buf [md5MaxLen + 1]byte
		prefix := strconv.AppendInt(buf[:0], int64(seeds[d]), 10)
		if len(prefix)+1+len(keys[d])+longestSuffix > md5MaxLen {
			k := keysOf(seeds[d], keys[d])
			copy(h[d*lanes:], k[:])
			continue
		}
		wide[d] = true
		prefix = append(prefix, ':')
		prefix = append(prefix, keys[d]...)
		for s, suffix := range suffixes {
			x.set(d*lanes+s, append(prefix, suffix...))
		}
	}
	if !wide[0] && !wide[1] {
		return
	}
	var out [md5Lanes]uint32
	md5Wide(&out, &x, &md5T)
	for d := range seeds {
		if wide[d] {
			for s := range lanes {
				// Bytes 12-15 of the digest, read big-endian.
				h[d*lanes+s] = bits.ReverseBytes32(out[d*lanes+s])
			}
		}
	}
}
