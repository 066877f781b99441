package perturb

import (
	"crypto/md5"
	"encoding/binary"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// md5Key is hash's key for a whole message: the digest's last four bytes
// read big-endian, by crypto/md5.
func md5Key(msg []byte) uint32 {
	sum := md5.Sum(msg)
	return binary.BigEndian.Uint32(sum[12:])
}

// RFC 1321's table starts and ends with these words (appendix A.3).
func TestMD5Table(t *testing.T) {
	for _, c := range []struct {
		i    int
		want uint32
	}{{0, 0xd76aa478}, {1, 0xe8c7b756}, {31, 0x8d2a4c8a}, {32, 0xfffa3942}, {62, 0x2ad7d2bb}, {63, 0xeb86d391}} {
		for l := range md5Lanes {
			if got := md5T[c.i][l]; got != c.want {
				t.Fatalf("T[%d] lane %d = %#x, want %#x", c.i+1, l, got, c.want)
			}
		}
	}
}

// md5Wide agrees with crypto/md5 in every lane, for random messages of
// every length a block holds, the lengths mixed across lanes.
func TestMD5WideMatchesMD5(t *testing.T) {
	if !haveWide {
		t.Skip("no AVX2")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 20000 {
		var x md5Block
		var msgs [md5Lanes][]byte
		for l := range msgs {
			n := (round + l*7) % (md5MaxLen + 1) // every length in every lane
			if round%3 == 0 {
				n = rng.IntN(md5MaxLen + 1)
			}
			msgs[l] = make([]byte, n)
			for i := range msgs[l] {
				msgs[l][i] = byte(rng.Uint32())
			}
			x.set(l, msgs[l])
		}
		var out [md5Lanes]uint32
		md5Wide(&out, &x, &md5T)
		for l, m := range msgs {
			sum := md5.Sum(m)
			if want := binary.LittleEndian.Uint32(sum[12:]); out[l] != want {
				t.Fatalf("lane %d, message %x: word D = %#x, crypto/md5 %#x", l, m, out[l], want)
			}
		}
	}
}

// keysWide is keysOf for one or two draws, including draws whose messages
// need a second block (hashed one at a time) next to draws that do not.
func TestKeysWideMatchesKeysOf(t *testing.T) {
	if !haveWide {
		t.Skip("no AVX2")
	}
	short := "charge:ch_3P0x1A2B3C:cus_9Xk2mN"
	keys := []string{short, "", "k", strings.Repeat("x", 44), strings.Repeat("x", 45), strings.Repeat("y", 60), "é✓"}
	for _, seed := range []int{-12345, -1, 0, 7, 99999, 1 << 40} {
		for _, k0 := range keys {
			for _, k1 := range keys {
				for n := 1; n <= 2; n++ {
					seeds, ks := []int{seed, seed + 1}[:n], []string{k0, k1}[:n]
					h := make([]uint32, 2*lanes)
					keysWide(h, seeds, ks)
					for d := range n {
						want := keysOf(seeds[d], ks[d])
						for s := range lanes {
							if h[d*lanes+s] != want[s] {
								t.Fatalf("keysWide(%v, %q) draw %d suffix %d = %#x, keysOf %#x", seeds, ks, d, s, h[d*lanes+s], want[s])
							}
						}
						msg := []byte(strings.Join([]string{strconv.Itoa(seeds[d]), ks[d] + suffixes[0]}, ":"))
						if md5Key(msg) != want[0] {
							t.Fatalf("keysOf(%d, %q) disagrees with crypto/md5", seeds[d], ks[d])
						}
					}
				}
			}
		}
	}
}

func BenchmarkKeysOf(b *testing.B) {
	for i := 0; b.Loop(); i++ {
		keysOf(i, "charge:ch_3P0x1A2B3C:cus_9Xk2mN")
		keysOf(i+1, "charge:ch_3P0x1A2B3C:cus_9Xk2mN")
	}
}

func BenchmarkKeysWide(b *testing.B) {
	var h [2 * lanes]uint32
	keys := []string{"charge:ch_3P0x1A2B3C:cus_9Xk2mN", "charge:ch_3P0x1A2B3C:cus_9Xk2mN"}
	for i := 0; b.Loop(); i++ {
		keysWide(h[:], []int{i, i + 1}, keys)
	}
}
