package perturb

// MT19937 parameters (Matsumoto and Nishimura, 1998).
const (
	mtN         = 624
	mtM         = 397
	mtMatrixA   = 0x9908b0df
	mtUpperMask = 0x80000000
	mtLowerMask = 0x7fffffff
)

// mt is an MT19937 generator seeded the way CPython's random module seeds
// it.
type mt struct {
	state [mtN]uint32
	next  int // index of the next word to temper; mtN means twist first
}

// initGenrand is the reference init_genrand(s).
func (m *mt) initGenrand(s uint32) {
	m.state[0] = s
	for i := 1; i < mtN; i++ {
		prev := m.state[i-1]
		m.state[i] = 1812433253*(prev^(prev>>30)) + uint32(i)
	}
	m.next = mtN
}

// arrayBase is init_genrand(19650218), where every init_by_array starts.
// It is computed once and only ever copied.
var arrayBase = func() (m mt) {
	m.initGenrand(19650218)
	return m
}()

// initByArray is the reference init_by_array(key), which CPython's
// random.seed uses for integer seeds. key must not be empty.
func (m *mt) initByArray(key []uint32) {
	m.state, m.next = arrayBase.state, arrayBase.next
	i, j := 1, 0
	for k := max(mtN, len(key)); k > 0; k-- {
		prev := m.state[i-1]
		m.state[i] = (m.state[i] ^ ((prev ^ (prev >> 30)) * 1664525)) + key[j] + uint32(j)
		i++
		j++
		if i >= mtN {
			m.state[0] = m.state[mtN-1]
			i = 1
		}
		if j >= len(key) {
			j = 0
		}
	}
	for k := mtN - 1; k > 0; k-- {
		prev := m.state[i-1]
		m.state[i] = (m.state[i] ^ ((prev ^ (prev >> 30)) * 1566083941)) - uint32(i)
		i++
		if i >= mtN {
			m.state[0] = m.state[mtN-1]
			i = 1
		}
	}
	m.state[0] = 0x80000000
}

// twist regenerates the whole state.
func (m *mt) twist() {
	for i := 0; i < mtN; i++ {
		m.state[i] = m.twisted(i)
	}
	m.next = 0
}

// twisted is the value word i takes in a twist, given that the words
// before i have already been replaced (as twist does, in order).
func (m *mt) twisted(i int) uint32 {
	j, k := i+1, i+mtM
	if j >= mtN {
		j -= mtN
	}
	if k >= mtN {
		k -= mtN
	}
	y := m.state[i]&mtUpperMask | m.state[j]&mtLowerMask
	v := m.state[k] ^ (y >> 1)
	if y&1 != 0 {
		v ^= mtMatrixA
	}
	return v
}

// temper is MT19937's output transformation.
func temper(y uint32) uint32 {
	y ^= y >> 11
	y ^= (y << 7) & 0x9d2c5680
	y ^= (y << 15) & 0xefc60000
	y ^= y >> 18
	return y
}

// firstFloat64 returns what float64 would return on a freshly seeded
// generator, without twisting the whole state: the first two words of a
// twist depend only on words 0–2, 397 and 398 of the seeded state.
func (m *mt) firstFloat64() float64 {
	return res53(temper(m.twisted(0)), temper(m.twisted(1)))
}

// res53 makes a double in [0,1) from two outputs, as CPython's random()
// does (genrand_res53).
func res53(a, b uint32) float64 {
	return (float64(a>>5)*67108864 + float64(b>>6)) / 9007199254740992
}

// uint32 returns the next tempered output (genrand_int32).
func (m *mt) uint32() uint32 {
	if m.next >= mtN {
		m.twist()
	}
	y := m.state[m.next]
	m.next++
	return temper(y)
}

// float64 returns a double in [0,1) with 53 random bits, as CPython's
// random() does.
func (m *mt) float64() float64 {
	a := m.uint32()
	return res53(a, m.uint32())
}
