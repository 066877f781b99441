// Package mask keeps the keys of masked fields: the values a gate's tool
// declares masked (toolgate.Tool.Masked: an email address, a card number)
// are stored as their keyed hash ([Hash], beginning with [Prefix]), never
// in clear, so that the store, its backups and the inspector hold no
// value a reader could use, while equal values still give equal hashes
// for bindings, once-keys and approval digests.
//
// A gate hashes under one key for every trace (toolgate.Config.MaskKey,
// at least [MinKey] bytes) or under each trace's own key from a [Keyring]
// (toolgate.Config.MaskKeys). [Keys] is the keyring of this package:
// [NewKeys] keeps its keys in memory, [OpenKeyDir] in a directory kept
// apart from the store (a file per trace). [Keys.Erase] destroys one
// trace's key, so that its stored hashes match no value anyone can
// compute (`bk erase` does it from the command line); a later call in
// that trace fails with [ErrErased] and writes nothing. See
// docs/security.md, "Masked fields".
package mask
