//go:build !bkmutate

package toolgate

// The switch of mutate_mask.go, off.
const mutMaskStore = false

// The switch of mutate_mask.go, off.
const mutMaskErase = false

// The switch of mutate_mask.go, off.
const mutMaskKeyNamespace = false
