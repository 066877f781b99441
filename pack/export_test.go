package pack

// Names the package's external tests use, kept unexported in the package.
const FlagConflicted = flagConflicted
const FlagStale = flagStale
const FlagSuperseded = flagSuperseded
const ReasonBudget = reasonBudget
const ReasonProhibited = reasonProhibited
const SectionConstraints = sectionConstraints
const SectionEvidence = sectionEvidence
const SectionMemory = sectionMemory
const SectionMission = sectionMission
const SectionProgress = sectionProgress
const SectionTools = sectionTools

type Cut = sectionCut

const Fresh = freshnessFresh
const Stale = freshnessStale

type Left = resourceLeft
type Section = sectionUse

var Steps = stepsOf
