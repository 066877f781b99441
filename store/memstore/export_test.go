package memstore

// NewPacking returns an empty store that packs each payload as soon as it
// is appended, so that every read goes through the packed form.
func NewPacking() *Store { return &Store{} }

// SplitID is splitID, for its test against store.SplitRecordID.
var SplitID = splitID

// Match is match, for the listing test.
var Match = match
