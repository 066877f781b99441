//go:build !purego

package perturb

// mixWide runs init_by_array's mixing loops for wideLanes one-word keys h
// in AVX2 registers (see wide_amd64.s and [firstFloatsWide]). s is scratch
// memory the call overwrites.
//
//go:noescape
func mixWide(h *[wideLanes]uint32, s *[mtN][wideLanes]uint32, base *[mtN]uint32)

// md5Wide sets out[l] to word D of the MD5 digest of lane l's padded
// one-block message in x (see wide_amd64.s and [keysWide]); t is [md5T].
//
//go:noescape
func md5Wide(out *[md5Lanes]uint32, x *md5Block, t *[64][md5Lanes]uint32)

func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)

func xcr0() uint32

// haveWide reports whether the processor has AVX2 and the operating
// system saves its registers.
var haveWide = func() bool {
	if max, _, _, _ := cpuid(0, 0); max < 7 {
		return false
	}
	_, _, c, _ := cpuid(1, 0)
	const osxsave, avx = 1 << 27, 1 << 28
	if c&osxsave == 0 || c&avx == 0 || xcr0()&6 != 6 { // XMM and YMM state
		return false
	}
	_, b, _, _ := cpuid(7, 0)
	return b&(1<<5) != 0 // AVX2
}()
