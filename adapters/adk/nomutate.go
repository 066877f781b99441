//go:build !bkmutate

package adk

// mutForgedConfirmation is the mutation switch of the confirmation check
// (see mutate.go); off in every build without the bkmutate tag.
const mutForgedConfirmation = false

// mutNoEffect is the switch of the call's effect (see mutate.go); off.
const mutNoEffect = false

// mutTraceUser is the switch of the default trace's user (see mutate.go);
// off.
const mutTraceUser = false

// mutPrincipal is the switch of the calls' principal (see mutate.go); off.
const mutPrincipal = false
