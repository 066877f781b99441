package perturb

// lanes is how many generators [firstFloats] seeds side by side. Seeding
// is one long chain of dependent multiplications per generator;
// interleaving independent chains lets the processor overlap them instead
// of waiting on each multiplication in turn. Four chains fit in the
// general registers of amd64 with room to spare (six or eight spill and
// run slower, measured).
const lanes = 4

// firstFloats returns, for each of four keys h[l], what
// random.Random(h[l]).random() returns in CPython: the same value as
// seeding an [mt] with initByArray([]uint32{h[l]}) and calling
// firstFloat64, computed without materialising the seeded states.
func firstFloats(h [lanes]uint32) (out [lanes]float64) {
	// s[i] holds the four lanes' word i after init_by_array's first mixing
	// loop; the second loop reads it back in order.
	var s [mtN][lanes]uint32
	base := &arrayBase.state

	// First loop (multiplier 1664525), positions 1…623: each position mixes
	// init_genrand's word with the previous result and adds the one-word
	// key (j stays 0, so key[j]+j is h).
	p0, p1, p2, p3 := base[0], base[0], base[0], base[0]
	for i := 1; i < mtN; i++ {
		b := base[i]
		p0 = (b ^ (p0^p0>>30)*1664525) + h[0]
		p1 = (b ^ (p1^p1>>30)*1664525) + h[1]
		p2 = (b ^ (p2^p2>>30)*1664525) + h[2]
		p3 = (b ^ (p3^p3>>30)*1664525) + h[3]
		s[i] = [lanes]uint32{p0, p1, p2, p3}
	}
	// The loop runs mtN times, so after wrapping (word 0 = word 623) it
	// mixes position 1 a second time.
	s[1][0] = (s[1][0] ^ (p0^p0>>30)*1664525) + h[0]
	s[1][1] = (s[1][1] ^ (p1^p1>>30)*1664525) + h[1]
	s[1][2] = (s[1][2] ^ (p2^p2>>30)*1664525) + h[2]
	s[1][3] = (s[1][3] ^ (p3^p3>>30)*1664525) + h[3]

	// Second loop (multiplier 1566083941), mtN-1 steps from position 2:
	// positions 2…623, then position 1 again after the wrap. Only the words
	// the first two outputs read are kept: 1, 2, 397 and 398 (word 0 ends
	// as the constant 0x80000000).
	p := [lanes]uint32{s[1][0], s[1][1], s[1][2], s[1][3]}
	p = mixSecond(&s, 2, 3, p)
	w2 := p
	p = mixSecond(&s, 3, 398, p)
	w397 := p
	p = mixSecond(&s, 398, 399, p)
	w398 := p
	last := mixSecond(&s, 399, mtN, p)
	for l := range lanes {
		q := last[l]
		w1 := (s[1][l] ^ (q^q>>30)*1566083941) - 1
		// The first two words of the first twist, as twisted(0) and
		// twisted(1) compute them.
		a := twistWord(0x80000000, w1, w397[l])
		b := twistWord(w1, w2[l], w398[l])
		out[l] = res53(temper(a), temper(b))
	}
	return out
}

// mixSecond runs the second mixing loop over positions from…to-1, the
// four lanes side by side, starting from their previous words p, and
// returns the last words it wrote. (A function, not a closure: the lanes
// then stay in registers.)
func mixSecond(s *[mtN][lanes]uint32, from, to int, p [lanes]uint32) [lanes]uint32 {
	p0, p1, p2, p3 := p[0], p[1], p[2], p[3]
	for i := from; i < to; i++ {
		x, k := &s[i], uint32(i)
		p0 = (x[0] ^ (p0^p0>>30)*1566083941) - k
		p1 = (x[1] ^ (p1^p1>>30)*1566083941) - k
		p2 = (x[2] ^ (p2^p2>>30)*1566083941) - k
		p3 = (x[3] ^ (p3^p3>>30)*1566083941) - k
	}
	return [lanes]uint32{p0, p1, p2, p3}
}

// twistWord is the value a word takes in a twist, from the word itself
// (hi), the next word (lo) and the word mtM ahead (far), none of which the
// twist has replaced yet.
func twistWord(hi, lo, far uint32) uint32 {
	y := hi&mtUpperMask | lo&mtLowerMask
	v := far ^ y>>1
	if y&1 != 0 {
		v ^= mtMatrixA
	}
	return v
}
