//go:build bkmutate

package toolgate

import "github.com/blackboardkernel/bk/internal/mutant"

// Mutation switches of the request a trace serves and the tools' scope
// (see kernel/mutate.go for the scheme); the default build declares them
// as false constants (nomutate_scope.go).
var (
	mutRequestScope     bool
	mutScopeDeclared    bool
	mutRequestPrincipal bool
	mutRequestOnce      bool
)

func init() {
	mutant.Register("github.com/blackboardkernel/bk/toolgate",
		mutant.Def{Name: "toolgate.request_scope", On: &mutRequestScope, Also: []string{"github.com/blackboardkernel/bk/examples/support_desk"},
			Check: "a call of a scoped tool whose argument is not within the trace's recorded request (a refund of another order than the ticket's), or made in a trace with no request, is OUT_OF_SCOPE, before the kernel and as the kernel decides: nothing runs"},
		mutant.Def{Name: "toolgate.scope_declared", On: &mutScopeDeclared,
			Check: "New refuses an effectful tool (not ReadOnly) that declares neither Scope nor Unscoped, naming the tool"},
		mutant.Def{Name: "toolgate.request_principal", On: &mutRequestPrincipal,
			Check: "a call made for another principal than the trace's recorded request is OUT_OF_SCOPE, whatever the tool"},
		mutant.Def{Name: "toolgate.request_once", On: &mutRequestOnce,
			Check: "a trace's request is recorded once for good: RecordRequest of another request is ErrRequestRecorded and records nothing"},
	)
}
