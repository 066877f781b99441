package pack

import (
	"context"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/toolgate"
)

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

// The record's sections and manifests, for the package's external tests.
func (p Pack) Sections() []Section          { return p.sections }
func (m Manifest) Evidence() []evidenceItem { return m.evidence }
func (m Manifest) Memory() []memoryItem     { return m.memory }
func (m Manifest) Controls() runControls    { return m.controls }
func (m Manifest) Cuts() []Cut              { return m.cuts }

// Payload is the payload p's record holds.
func Payload(p *Pack) (map[string]any, error) { return p.payload() }

// GovernWith is Govern on a fake gate's governance.
func GovernWith(ctx context.Context, g interface {
	Controls(ctx context.Context, traceID string) (toolgate.Controls, error)
	Policy() audit.Policy
}, run *Run, in *Input) error {
	return govern(ctx, g, run, in)
}
