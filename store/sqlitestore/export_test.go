package sqlitestore

// SchemaVersion is the schema version this package writes, for the
// package's external tests.
func SchemaVersion() int { return len(migrations) }
