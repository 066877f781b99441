package sim

// Names the package's external tests use, kept unexported in the package.
const KeyRule = keyRule

var ValidateRules = validateRules
