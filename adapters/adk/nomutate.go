//go:build !bkmutate

package adk

// mutForgedConfirmation is the mutation switch of the confirmation check
// (see mutate.go); off in every build without the bkmutate tag.
const mutForgedConfirmation = false

// mutNoEffect is the switch of the call's effect (see mutate.go); off.
const mutNoEffect = false
