package invariant

import (
	"fmt"
	"slices"
	"strings"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
)

// deriverPrefix begins the writer id under which the gate proposes the
// beliefs a tool derives ([audit.DeriverWriter]).
var deriverPrefix = audit.DeriverWriter("")

// derived checks the beliefs of t that tools derive ([derivedSource]): a
// proposal written as a tool's deriver depends on exactly one record, a
// successful result of that tool in t before it, named both as its
// depends_on and as its one input ref; the kernel's commit of it rests on
// that result alone; and no belief of a kind a tool derives is committed
// from anyone else's proposal.
func (c *checker) derived(t *trace) error {
	if mutDerivedSource {
		return nil
	}
	return c.derivedSources(t)
}

// derivedSources is derived's check: the mutation switch
// mutDerivedSource skips it.
func (c *checker) derivedSources(t *trace) error {
	for i := range t.recs {
		r := &t.recs[i]
		if r.Slot != blackboard.Beliefs {
			continue
		}
		bad := func(format string, args ...any) {
			c.report(derivedSource, t.id, r.ID, "belief "+r.Kind+": "+fmt.Sprintf(format, args...))
		}
		switch r.Mode {
		case blackboard.ModePropose:
			tool, ok := strings.CutPrefix(r.Provenance.Writer, deriverPrefix)
			if !ok {
				continue
			}
			if err := c.derivedProposal(t, r, i, tool, bad); err != nil {
				return err
			}
		case blackboard.ModeCommit:
			if len(r.Provenance.InputRefs) == 0 {
				continue
			}
			p, _, found, err := c.record(t, r.Provenance.InputRefs[0])
			if err != nil {
				return err
			}
			tool, derived := strings.CutPrefix(p.Provenance.Writer, deriverPrefix)
			switch {
			case found && derived && len(p.Provenance.InputRefs) > 0:
				if src := p.Provenance.InputRefs[0]; !slices.Equal(r.Provenance.InputRefs[1:], []string{src}) {
					bad("derived by %s from %s, committed on %v", tool, src, r.Provenance.InputRefs[1:])
				}
			case !derived && len(c.policy(r.Namespace).derivers[r.Kind]) > 0:
				who := "no proposal"
				if found {
					who = "a proposal of " + p.Provenance.Writer
				}
				bad("a kind a tool derives, committed from %s", who)
			}
		}
	}
	return nil
}

// derivedProposal checks one proposal the deriver of tool wrote (record r
// at index i of t).
func (c *checker) derivedProposal(t *trace, r *blackboard.Record, i int, tool string, bad func(string, ...any)) error {
	refs := r.Provenance.InputRefs
	deps, _ := r.Payload["depends_on"].([]any)
	if len(refs) != 1 || len(deps) != 1 || deps[0] != any(refs[0]) {
		bad("derived by %s: depends_on %v and input refs %v do not name one source record", tool, r.Payload["depends_on"], refs)
		return nil
	}
	src, at, found, err := c.record(t, refs[0])
	if err != nil {
		return err
	}
	e, ok := audit.EffectOf(src)
	switch {
	case !found:
		bad("derived by %s from %s, which does not exist", tool, refs[0])
	case at < 0 || at > i:
		bad("derived by %s from %s, not a record of the trace before it", tool, refs[0])
	case !ok || e.Status != audit.StatusSucceeded || e.Tool != tool:
		bad("derived by %s from %s, which is not a result of %s", tool, refs[0], tool)
	default:
		if ds := c.policy(r.Namespace).derivers[r.Kind]; ds != nil && !ds[tool] {
			bad("derived by %s, which no recorded policy lets derive it", tool)
		}
	}
	return nil
}
