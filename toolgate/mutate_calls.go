//go:build bkmutate

package toolgate

import "github.com/blackboardkernel/bk/internal/mutant"

// Mutation switches of the gate's checks on calls and attempts (see
// kernel/mutate.go for the scheme); the default build declares them as
// false constants (nomutate_calls.go).
var (
	mutLeaseDeadline    bool
	mutLeaseLeft        bool
	mutBudgetCompose    bool
	mutToolName         bool
	mutArgBinding       bool
	mutBindingsDeclared bool
	mutBindCommitted    bool
)

func init() {
	mutant.Register("github.com/blackboardkernel/bk/toolgate",
		mutant.Def{Name: "toolgate.lease_deadline", On: &mutLeaseDeadline,
			Check: "an attempt's effect loses its context a margin before the deadline its record holds, and no driver takes over until a margin after it (exactly once under a slow store)"},
		mutant.Def{Name: "toolgate.lease_left", On: &mutLeaseLeft,
			Check: "an attempt whose write left less than the margin of its lease does not start its effect"},
		mutant.Def{Name: "toolgate.budget_compose", On: &mutBudgetCompose, Also: []string{"github.com/blackboardkernel/bk/worker/llm"},
			Check: "a call's own budget adds to the gate's, never replaces it: every limit that applies is checked (BUDGET_EXCEEDED)"},
		mutant.Def{Name: "toolgate.tool_name", On: &mutToolName,
			Check: "a tool name is 1 to 64 of A-Z, a-z, 0-9, _, . and - at registration, and a call naming anything else is TOOL_UNKNOWN with the name escaped in its record"},
		mutant.Def{Name: "toolgate.arg_binding", On: &mutArgBinding,
			Check: "a call's arguments follow from the observations its grounding rests on, as the tool's bindings say (ARGUMENT_NOT_BOUND)"},
		mutant.Def{Name: "toolgate.arg_binding_committed", On: &mutBindCommitted,
			Check: "a committed action whose kernel grounding is not the one checked before the decision has its arguments checked against its own grounding, and never runs if they break a binding (ARGUMENT_NOT_BOUND)"},
		mutant.Def{Name: "toolgate.bindings_declared", On: &mutBindingsDeclared,
			Check: "New refuses a tool resting on beliefs that declares neither Bindings nor Unbound"},
	)
}

// mutUnkeyedRedrive re-drives an unkeyed effect's attempt that left no
// result, as for a keyed one.
var mutUnkeyedRedrive bool

func init() {
	mutant.Register("github.com/blackboardkernel/bk/toolgate",
		mutant.Def{Name: "toolgate.unkeyed_at_most_once", On: &mutUnkeyedRedrive,
			Check: "an effect without a once-key (not Idempotent, not read-only) is started at most once per call: an attempt that began and left no result is EFFECT_UNKNOWN, never started again"})
}

// Switches of retry keys ([Call.RetryKey]): mutRetryKeyOnce ignores the
// key (every call makes a new action); mutRetryKeyBinding answers a reused
// key without comparing the call with the one that used it.
var mutRetryKeyOnce, mutRetryKeyBinding bool

func init() {
	mutant.Register("github.com/blackboardkernel/bk/toolgate",
		mutant.Def{Name: "toolgate.retry_key_once", On: &mutRetryKeyOnce,
			Check: "a retry key makes one action per trace: a retry with the same key gets the recorded decision and result, and the effect never runs twice"},
		mutant.Def{Name: "toolgate.retry_key_binding", On: &mutRetryKeyBinding,
			Check: "a retry key is bound to the tool, caller and arguments that used it: another call under it is RETRY_KEY_CONFLICT and learns nothing of the first"})
}
