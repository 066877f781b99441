//go:build !amd64 || purego

package perturb

// Elsewhere, or with the purego build tag, [Rates.DrawMany] draws one at a
// time.
const haveWide = false

func mixWide(h *[wideLanes]uint32, s *[mtN][wideLanes]uint32, base *[mtN]uint32) {
	panic("perturb: no vector seeding on this architecture")
}
