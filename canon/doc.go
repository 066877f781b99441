// Package canon is the module's one canonical form of a JSON value, and the
// one digest built on it. Every identity that must not depend on how a value
// is spelled goes through it: the digest an approval binds
// (toolgate.ArgsDigest), the values of a once-key, and the loop guard's
// identity of a tool call (budget.Digest).
//
// Two spellings of one value have one canonical form: object keys are
// sorted, insignificant space is dropped, and numbers are compared by the
// IEEE-754 double the kernel keeps of them (2, 2.0, 2e0 and 20e-1 are one
// number; so are 0 and -0). Strings are kept as they are, and must be
// UTF-8. Anything without a canonical form — NaN, an infinity, a repeated
// object key in raw JSON — is refused with [ErrInvalid] rather than given
// one arbitrarily.
//
// The functions are pure and safe for concurrent use.
package canon
