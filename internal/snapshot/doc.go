// Package snapshot is the typed form of a policy snapshot
// ([audit.Policy]): the tool gate builds one from what it registered and
// encodes it ([Policy.Encode]); a replay, the invariant checker, a
// compiled context's governance and the inspector decode it ([Decode]).
// The record, its trace and its hash check are package audit's; this
// package is the shape of the JSON the record holds, which must stay as
// it is: stores hold snapshots and decision records name their hashes.
package snapshot
