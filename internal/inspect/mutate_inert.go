//go:build bkmutate

package inspect

import "github.com/blackboardkernel/bk/internal/mutant"

// mutInertText switches off the escaping of stored text ([Inert],
// [InertJSON]); see kernel/mutate.go for the scheme.
var mutInertText bool

func init() {
	mutant.Register("github.com/blackboardkernel/bk/internal/inspect",
		mutant.Def{Name: "inspect.inert_text", Check: "stored text is printed inert: no control character, C1 control or bidirectional control reaches the operator's terminal", On: &mutInertText},
	)
}
