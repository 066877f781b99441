// Package ident checks the names the module keys records by — trace ids,
// namespaces, callers, tool and belief names — in one place, so that the
// gate and the mask keyring refuse exactly the same strings.
package ident
