package perturb

import "testing"

// firstFloats is four generators seeded at once; each lane must agree with
// the reference generator.
func TestFirstFloatsMatchesGenerator(t *testing.T) {
	for n := uint32(0); n < 8000; n += lanes {
		var h [lanes]uint32
		for l := range h {
			h[l] = (n + uint32(l)) * 2654435761 // spread over the 32-bit range
		}
		if n == 0 {
			h = [lanes]uint32{0, 5, 5489, 0xffffffff} // CPython's check seeds
		}
		got := firstFloats(h)
		for l := range h {
			var m mt
			m.initByArray([]uint32{h[l]})
			if want := m.float64(); got[l] != want {
				t.Fatalf("seed %d: firstFloats = %v, generator = %v", h[l], got[l], want)
			}
		}
	}
}

// refDraw is Draw as the reference implementation does it: one generator
// per fault, in order, stopping at a drop.
func refDraw(r Rates, seed int, key string) Flags {
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

func TestDrawMatchesReference(t *testing.T) {
	keys := []string{"charge:ch_3P0x1A2B3C:cus_9Xk2mN", "charge:ch_6U5c6F9L0M:cus_8Xr4tN", "", "k"}
	for _, r := range []Rates{DefaultRates(), {Drop: 0.3, Stale: 0.5, Conflict: 0.5, LowConfidence: 0.5}, {}, {Drop: 1, Stale: 1, Conflict: 1, LowConfidence: 1}} {
		for _, key := range keys {
			for seed := -3; seed < 3000; seed++ {
				if got, want := r.Draw(seed, key), refDraw(r, seed, key); got != want {
					t.Fatalf("Draw(%d, %q) with %+v = %+v, reference %+v", seed, key, r, got, want)
				}
			}
		}
	}
}

func BenchmarkDraw(b *testing.B) {
	r := DefaultRates()
	for i := 0; b.Loop(); i++ {
		r.Draw(i, "charge:ch_3P0x1A2B3C:cus_9Xk2mN")
	}
}

func BenchmarkDrawReference(b *testing.B) {
	r := DefaultRates()
	for i := 0; b.Loop(); i++ {
		refDraw(r, i, "charge:ch_3P0x1A2B3C:cus_9Xk2mN")
	}
}

// DrawMany is Draw for each pair, for every length up to eighteen.
func TestDrawManyMatchesDraw(t *testing.T) {
	keys := []string{"charge:ch_3P0x1A2B3C:cus_9Xk2mN", "charge:ch_6U5c6F9L0M:cus_8Xr4tN", "", "k"}
	for _, r := range []Rates{DefaultRates(), {Drop: 0.3, Stale: 0.5, Conflict: 0.5, LowConfidence: 0.5}} {
		for n := range 18 {
			for first := -3; first < 600; first += n + 1 {
				seeds, ks := make([]int, n), make([]string, n)
				for i := range n {
					seeds[i], ks[i] = first+i, keys[(first+i+3)%len(keys)]
				}
				got := make([]Flags, n)
				r.DrawMany(got, seeds, ks)
				for i := range n {
					if want := r.Draw(seeds[i], ks[i]); got[i] != want {
						t.Fatalf("%d draws from seed %d: draw %d = %+v, Draw %+v", n, first, i, got[i], want)
					}
				}
			}
		}
	}
}

// BenchmarkDrawMany reports the cost of one draw among sixteen, as the
// study draws a chunk's.
func BenchmarkDrawMany(b *testing.B) {
	r := DefaultRates()
	var dst [16]Flags
	var seeds [16]int
	keys := make([]string, 16)
	for i := range keys {
		keys[i] = "charge:ch_3P0x1A2B3C:cus_9Xk2mN"
	}
	for i := 0; b.Loop(); i++ {
		for j := range seeds {
			seeds[j] = i*16 + j
		}
		r.DrawMany(dst[:], seeds[:], keys)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(16*b.N), "ns/draw")
}
