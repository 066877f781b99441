//go:build bkmutate

package kernel

import "github.com/blackboardkernel/bk/internal/mutant"

// mutInertText switches off the inspector's escaping of stored text
// ([Inert], [InertJSON]); kept apart from mutate.go's list because no
// planner's move reaches it: only tests judge it.
var mutInertText bool

func init() {
	mutant.Register("github.com/blackboardkernel/bk/kernel",
		mutant.Def{Name: "inert_text", Check: "stored text is printed inert: no control character, C1 control or bidirectional control reaches the operator's terminal", On: &mutInertText,
			ByTests: true, Also: []string{"github.com/blackboardkernel/bk/inspect"}})
}
