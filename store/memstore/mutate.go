//go:build bkmutate

package memstore

import "github.com/blackboardkernel/bk/internal/mutant"

// The kernel's mutation switches this store's checks answer to (the
// kernel registers them; see its mutate.go).
func mutStateVersion() bool { return mutant.On("state_version") }
func mutSharedCache() bool  { return mutant.On("shared_cache") }

// mutTraceNamespaceOn is this store's own switch (see kernel/mutate.go for
// the scheme).
var mutTraceNamespaceOn bool

func mutTraceNamespace() bool { return mutTraceNamespaceOn }

func init() {
	mutant.Register("github.com/blackboardkernel/bk/store/memstore",
		mutant.Def{Name: "memstore.trace_namespace", On: &mutTraceNamespaceOn,
			Check: "a trace is named by its namespace and id: one trace id in two namespaces is two traces, so two applications that name a trace alike never share it",
			Also:  []string{"github.com/blackboardkernel/bk/toolgate"}},
	)
}
