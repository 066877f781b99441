package ramp

// Of turns a used fraction into pressure: 0 up to the soft threshold,
// then linear to 1 at the limit, 1 beyond it. A NaN fraction is 0.
func Of(frac, soft float64) float64 {
	switch {
	case frac >= 1:
		return 1
	case !(frac > soft): // also NaN
		return 0
	}
	return (frac - soft) / (1 - soft)
}
