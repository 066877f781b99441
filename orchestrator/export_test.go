package orchestrator

// Names the package's external tests use, kept unexported in the package.
const DefaultMaxRounds = defaultMaxRounds
