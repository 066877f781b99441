package sim

import (
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
)

// Names the package's external tests use, kept unexported in the package.
const KeyRule = keyRule

var ValidateRules = validateRules

func (c Condition) Validate() error                 { return c.validate() }
func (c Condition) Holds(p blackboard.Payload) bool { return c.holds(p) }
func (r Rule) Validate() error                      { return r.validate() }
func (r Rule) Match(v kernel.View) bool             { return r.match(v) }
