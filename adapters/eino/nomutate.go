//go:build !bkmutate

package eino

// The switch of mutate.go, off for good in the default build.
const mutNoEffect = false
