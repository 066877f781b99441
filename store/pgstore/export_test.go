package pgstore

// SchemaVersion is the schema version this package creates, for the
// package's external tests.
const SchemaVersion = schemaVersion
