package perturb

import (
	"errors"
	"math"
	"testing"
)

// The reference MT19937 (mt19937ar.c) values.
func TestMTInitGenrand(t *testing.T) {
	var m mt
	m.initGenrand(5489)
	if got := m.uint32(); got != 3499211612 {
		t.Fatalf("init_genrand(5489) first output = %d, want 3499211612", got)
	}
}

func TestMTInitByArray(t *testing.T) {
	var m mt
	m.initByArray([]uint32{0x123, 0x234, 0x345, 0x456})
	want := []uint32{1067595299, 955945823, 477289528, 4107218783, 4228976476}
	for i, w := range want {
		if got := m.uint32(); got != w {
			t.Fatalf("init_by_array output %d = %d, want %d", i, got, w)
		}
	}
}

// Values CPython 3 prints for random.Random(seed): getrandbits(32) is one
// tempered output, random() the 53-bit double.
func TestMTMatchesCPython(t *testing.T) {
	var m mt
	m.initByArray([]uint32{5489})
	for i, w := range []uint32{3382763572, 956215839, 417760592} {
		if got := m.uint32(); got != w {
			t.Fatalf("random.Random(5489).getrandbits(32) #%d = %d, want %d", i, got, w)
		}
	}
	for _, c := range []struct {
		seed uint32
		want float64
	}{{0, 0.8444218515250481}, {5, 0.6229016948897019}, {math.MaxUint32, 0.6353574441341173}} {
		var m mt
		m.initByArray([]uint32{c.seed})
		if got := m.float64(); got != c.want {
			t.Errorf("random.Random(%d).random() = %v, want %v", c.seed, got, c.want)
		}
	}
}

// Draws computed with CPython:
// random.Random(int.from_bytes(md5(f"{seed}:{k}").digest(), "big") % 2**32).random()
func TestUniformMatchesReference(t *testing.T) {
	const clean = "charge:ch_3P0x1A2B3C:cus_9Xk2mN"
	const combined = "charge:ch_6U5c6F9L0M:cus_8Xr4tN"
	for _, c := range []struct {
		seed int
		key  string
		want float64
	}{
		{0, clean + ":drop", 0.796123533151077},
		{0, clean + ":stale", 0.09592853132248569},
		{0, clean + ":conflict", 0.886643703775336},
		{0, clean + ":low_conf", 0.5667676243462488},
		{1, clean + ":conflict", 0.0071588574372327685},
		{3, clean + ":stale", 0.030980721381930865},
		{5, combined + ":drop", 0.007716326495317838},
		{4, combined + ":low_conf", 0.05121480236950138},
		{7, combined + ":stale", 0.08685064687231703},
	} {
		if got := Uniform(c.seed, c.key); got != c.want {
			t.Errorf("Uniform(%d, %q) = %v, want %v", c.seed, c.key, got, c.want)
		}
	}
}

// The check values of docs/reproduction.md §1 and §3.
func TestDrawCheckValues(t *testing.T) {
	r := DefaultRates()
	for _, c := range []struct {
		seed int
		key  string
		want Flags
	}{
		{0, "charge:ch_3P0x1A2B3C:cus_9Xk2mN", Flags{Stale: true}},
		{1, "charge:ch_3P0x1A2B3C:cus_9Xk2mN", Flags{Conflict: true}},
		{2, "charge:ch_3P0x1A2B3C:cus_9Xk2mN", Flags{}},
		{5, "charge:ch_6U5c6F9L0M:cus_8Xr4tN", Flags{Drop: true}},
		{4, "charge:ch_6U5c6F9L0M:cus_8Xr4tN", Flags{Stale: true, LowConfidence: true}},
	} {
		if got := r.Draw(c.seed, c.key); got != c.want {
			t.Errorf("Draw(%d, %q) = %+v, want %+v", c.seed, c.key, got, c.want)
		}
	}
}

func TestDrawRatesAreThresholds(t *testing.T) {
	const key = "charge:ch_3P0x1A2B3C:cus_9Xk2mN"
	if got := (Rates{}).Draw(0, key); got != (Flags{}) {
		t.Errorf("zero rates drew %+v", got)
	}
	all := Rates{Drop: 0, Stale: 1, Conflict: 1, LowConfidence: 1}
	if got := all.Draw(0, key); got != (Flags{Stale: true, Conflict: true, LowConfidence: true}) {
		t.Errorf("rates of 1 drew %+v", got)
	}
	if got := (Rates{Drop: 1, Stale: 1}).Draw(0, key); got != (Flags{Drop: true}) {
		t.Errorf("a drop drew %+v, want the drop alone", got)
	}
	// U(0, key:low_conf) = 0.5667...: a rate just above it flags, just below does not.
	if !(Rates{LowConfidence: 0.567}).Draw(0, key).LowConfidence || (Rates{LowConfidence: 0.566}).Draw(0, key).LowConfidence {
		t.Error("low confidence flag does not follow U < rate")
	}
}

func TestRatesValidate(t *testing.T) {
	if err := DefaultRates().Validate(); err != nil {
		t.Fatalf("default rates: %v", err)
	}
	for _, r := range []Rates{
		{Drop: -0.01},
		{Stale: 1.5},
		{Conflict: math.NaN()},
		{LowConfidence: math.Inf(1)},
	} {
		if err := r.Validate(); !errors.Is(err, ErrInvalidRate) {
			t.Errorf("Validate(%+v) = %v, want ErrInvalidRate", r, err)
		}
	}
}

func BenchmarkUniform(b *testing.B) {
	for i := 0; b.Loop(); i++ {
		Uniform(i, "charge:ch_3P0x1A2B3C:cus_9Xk2mN:stale")
	}
}

// firstFloat64 is a shortcut of float64 on a fresh generator; it must agree.
func TestFirstFloat64MatchesGenerator(t *testing.T) {
	for h := uint32(0); h < 2000; h++ {
		seed := h * 2654435761 // spread over the 32-bit range
		var a, b mt
		a.initByArray([]uint32{seed})
		b = a
		if got, want := a.firstFloat64(), b.float64(); got != want {
			t.Fatalf("seed %d: firstFloat64 = %v, float64 = %v", seed, got, want)
		}
	}
}
