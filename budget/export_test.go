package budget

// Names the package's external tests use, kept unexported in the package.
const DefaultMaxIdentical = defaultMaxIdentical
const DefaultSoft = defaultSoft

type LoopDetected = loopDetected

const ToolCallsPerTurn = toolCallsPerTurn

var ToolMaxIdentical = toolMaxIdentical
