// Package reply is the structured form of a gate's answer as a model is
// shown it: the JSON object whose text toolgate.Result.ForModel returns.
// The framework adapters and their conformance suite read it; nothing
// else needs the type.
package reply
