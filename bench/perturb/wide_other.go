//go:build !amd64 || purego

package perturb

// Elsewhere, or with the purego build tag, [Rates.DrawMany] draws one at a
// time.
const haveWide = false

func mixWide(h *[wideLanes]uint32, s *[mtN][wideLanes]uint32, base *[mtN]uint32) {
	panic("perturb: no vector seeding on this architecture")
}

func md5Wide(out *[md5Lanes]uint32, x *md5Block, t *[64][md5Lanes]uint32) {
	panic("perturb: no vector hashing on this architecture")
}
