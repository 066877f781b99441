package llm

// Names the package's external tests use, kept unexported in the package.
var APIKeyFromEnv = apiKeyFromEnv

const DefaultMaxRounds = defaultMaxRounds

var Extract = extract
