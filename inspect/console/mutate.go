//go:build bkmutate

package console

import "github.com/blackboardkernel/bk/internal/mutant"

// The console's security checks, switchable off to prove a test catches
// each (see kernel/mutate.go for the scheme).
var mutCSRF, mutIdentity, mutSVG, mutHost, mutTokenMode bool

func init() {
	mutant.Register("github.com/blackboardkernel/bk/inspect/console",
		mutant.Def{Name: "console.csrf", Check: "bk serve refuses a decision whose form lacks the identity's CSRF token", On: &mutCSRF},
		mutant.Def{Name: "console.identity", Check: "bk serve refuses every request that names no identity", On: &mutIdentity},
		mutant.Def{Name: "console.host", Check: "bk serve refuses a request addressed to a host it does not serve (DNS rebinding), in every identity mode", On: &mutHost},
		mutant.Def{Name: "console.token_mode", Check: "bk serve refuses a token file that group or others may read or write", On: &mutTokenMode},
		mutant.Def{Name: "console.svg", Check: "bk serve's timeline picture escapes the stored text it draws", On: &mutSVG},
	)
}
