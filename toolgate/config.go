package toolgate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/budget"
	"github.com/blackboardkernel/bk/internal/kernelhook"
	"github.com/blackboardkernel/bk/internal/rebuild"
	"github.com/blackboardkernel/bk/internal/telemetry"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/mask"
)

// defaultLease is how long an attempt is reserved to its driver when
// [Config.Lease] is zero.
const defaultLease = time.Minute

// Config is what [New] builds a gate, and the kernel it governs, from.
// Each field's zero value means its documented default; New copies what it
// keeps.
type Config struct {
	// Kernel configures the kernel the gate builds: its store, clock,
	// namespace, belief specs, validators, the action specs of actions
	// that are no tool's, telemetry providers (the gate traces and measures
	// with the kernel's), and so on. The gate adds to it: its tools' action
	// specs, a belief spec for each derived belief the owner gives none
	// for (resting on the deriving tool's result kind), its own validators
	// (run controls, request scope) ahead of the owner's, and reservations
	// ([kernel.Config.Reserved]) of each derived belief to its tool's deriver
	// and of each tool's action type to the callers whose contracts list
	// the tool. These reservations replace any of the owner's for the same
	// kinds: the owner cannot take a tool's kinds back. An action spec for
	// a tool's action type is a configuration error.
	Kernel kernel.Config
	// Tools are the tools, in the order [Gate.Surface] lists them. A tool
	// that rests on no belief has its action type registered as a safe,
	// repeatable action (it may be called as often as the model needs),
	// any other's as requiring the tool's beliefs, with the tool's
	// once-key ([Tool.Once]).
	Tools []Tool
	// Contracts are the callers' contracts: each caller's name, as calls
	// give it ([Call.Caller]), and the registered tools a worker calling
	// under it may use. A tool not listed is refused (TOOL_NOT_PERMITTED)
	// and never surfaced; a caller not given has no tool.
	Contracts map[string][]string
	// Intents name kinds of request, as calls give them ([Call.Intent]),
	// and the registered tools that may serve each. When any is given,
	// every call must name an intent that lists its tool.
	Intents map[string][]string
	// Lease is how long an attempt is reserved to the driver that wrote it
	// (0: a minute), counted from just before its write. The
	// effect's context is cancelled a margin (a tenth of the lease, at
	// most 5 s) before the lease runs out; a margin after it, another
	// driver ([Gate.Recover], a concurrent [Gate.Execute]) may start the
	// next attempt with the same key. Choose a lease longer than the
	// effect and a slow write of the store take together.
	Lease time.Duration
	// Fallback is the safe fallback action type a denied or expired
	// approval escalates to ("": kernel.FallbackQueueForReview). Another
	// type must have a kernel action spec with SafeFallback
	// (Kernel.ActionSpecs), and may not be a tool's.
	Fallback string
	// Budget is a run budget that every call is charged to, besides any
	// the call carries ([Call.Budget]): they compose, and a call must pass
	// both. nil: none. The gate's run is the ceiling of every call it
	// serves; when several runs or lanes share a gate, give each call its
	// own too (a sub-run of the gate's run counts on it once, not twice).
	Budget *budget.Run
	// Guard is a loop guard that every call is checked against, besides
	// any the call carries ([Call.Guard]). nil: none.
	Guard *budget.Guard
	// MaskKey is one key of the keyed hash that stands in the store for
	// the values of the tools' masked fields ([Tool.Masked]), in every
	// trace: at least [mask.MinKey] bytes. The key is copied. Destroying
	// every copy of it erases the masked values of every trace it hashed,
	// at once (see the package doc, "Masked fields"); MaskKeys erases one
	// trace's. New refuses a tool that masks a field when neither MaskKey
	// nor MaskKeys is set, and both at once.
	MaskKey []byte
	// MaskKeys makes the gate hash each trace's masked fields under that
	// trace's own key from the ring, in the gate's kernel's namespace
	// (gates of different namespaces may share a ring and keep apart), so
	// that erasing one trace's key ([mask.Keys.Erase]) erases its masked values
	// and no other trace's. New refuses a tool whose once-key ([Tool.Once])
	// reads a masked field: once-keys hold across traces, and the same
	// value hashes differently in each. A call in a trace whose key the
	// ring cannot give fails with the ring's error (an erased trace:
	// [mask.ErrErased]) and writes nothing.
	MaskKeys mask.Keyring
}

// Validate reports every problem of c that [New] would refuse, at once:
// nil, or the [*kernel.ConfigError]s joined, each wrapping
// [blackboard.ErrInvalidInput] and naming the field at fault as Go code
// would reach it from c: a tool's as `Tools["issue_refund"].Requires[0]`,
// the gate's own as "Lease" or `Contracts["support"]`, the kernel's as
// "Kernel.MinConfidence". Besides each field's own checks it refuses the
// configurations that can never work (see [New]).
func (c Config) Validate() error {
	_, _, err := c.compile(true)
	return err
}

// problems collects a Config's problems.
type problems []error

func (p *problems) add(field, format string, a ...any) {
	*p = append(*p, configError(field, format, a...))
}

// configError is the problem of field.
func configError(field, format string, a ...any) error {
	return &kernel.ConfigError{Field: field, Problem: fmt.Sprintf(format, a...)}
}

// toolField names field of tool name: `Tools["name"].field`.
func toolField(name, field string) string {
	return "Tools[" + escapedTool(name) + "]." + field
}

// compile checks c and compiles the gate it describes, without its
// kernel, and the configuration of that kernel. Without reachable, the
// checks of configurations that can never work ([Gate.unreachable]) are
// skipped: a rebuild from a recorded policy (package internal/rebuild).
func (c Config) compile(reachable bool) (*Gate, kernel.Config, error) {
	var errs problems
	lease := c.Lease
	if lease == 0 {
		lease = defaultLease
	}
	if lease < 0 {
		errs.add("Lease", "%v is negative", c.Lease)
	}
	fallback := c.Fallback
	if fallback == "" {
		fallback = kernel.FallbackQueueForReview
	}
	g := &Gate{tools: map[string]*entry{}, contracts: map[string]*contract{},
		lease: lease, fallback: fallback, budget: c.Budget, guard: c.Guard}
	switch {
	case c.MaskKey != nil && c.MaskKeys != nil:
		errs.add("MaskKey", "both MaskKey and MaskKeys")
	case c.MaskKeys != nil:
		g.mask = &masker{ring: c.MaskKeys}
	case c.MaskKey != nil && len(c.MaskKey) < mask.MinKey:
		errs.add("MaskKey", "%d bytes (want at least %d)", len(c.MaskKey), mask.MinKey)
	case c.MaskKey != nil:
		g.mask = &masker{key: slices.Clone(c.MaskKey)}
	}
	derivedBy := map[string]*entry{}
	for _, t := range c.Tools {
		e, err := register(g, t)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(e.Masked) > 0 && g.mask == nil && !(c.MaskKey != nil || c.MaskKeys != nil) {
			// Fail closed: without a key the values would be stored.
			errs.add(toolField(e.Name, "Masked"), "masks fields %q but the gate has no mask key (MaskKey, MaskKeys)", e.Masked)
		}
		g.tools[e.Name] = e
		g.order = append(g.order, e)
		for j, d := range e.derives {
			if other, ok := derivedBy[d.Belief]; ok {
				errs.add(toolField(e.Name, fmt.Sprintf("Derives[%d].Belief", j)), "belief %q is derived by tool %q too", d.Belief, other.Name)
				continue
			}
			derivedBy[d.Belief] = e
		}
	}
	if err := checkMaskedOnce(g); err != nil {
		errs = append(errs, err)
	}
	kc, kerrs := kernelConfig(g, c)
	errs = append(errs, kerrs...)
	errs = append(errs, checkFallback(g, c)...)
	errs = append(errs, compileCallers(g, c)...)
	if reachable {
		errs = append(errs, unreachable(g, c, derivedBy)...)
	}
	if len(errs) > 0 {
		return nil, kernel.Config{}, errors.Join(errs...)
	}
	return g, kc, nil
}

// kernelConfig is the configuration of the gate's kernel: the owner's
// (c.Kernel), checked, and what the gate adds to it (see [Config.Kernel]).
func kernelConfig(g *Gate, c Config) (kernel.Config, problems) {
	var errs problems
	if err := c.Kernel.Validate(); err != nil {
		for _, one := range splitJoined(err) {
			var kerr *kernel.ConfigError
			if errors.As(one, &kerr) {
				errs.add("Kernel."+kerr.Field, "%s", kerr.Problem)
			} else {
				errs.add("Kernel", "%v", one)
			}
		}
	}
	kc := c.Kernel
	kc.ActionSpecs = slices.Clone(kc.ActionSpecs)
	for i, s := range c.Kernel.ActionSpecs {
		if e := g.tools[s.Type]; e != nil {
			errs.add(fmt.Sprintf("Kernel.ActionSpecs[%d].Type", i), "action type %q is tool %s's and also a kernel action spec", s.Type, escapedTool(e.Name))
		}
	}
	owned := map[string]bool{} // belief kinds the owner gives a spec for
	for _, s := range c.Kernel.BeliefSpecs {
		owned[s.Kind] = true
	}
	kc.BeliefSpecs = slices.Clone(kc.BeliefSpecs)
	// The run controls are checked in the kernel's decision, first among
	// the validators: against the trace state the kernel decides on, so
	// that a Restrict that lands meanwhile makes the kernel decide again,
	// and at no read of its own.
	kc.Validators = append([]kernel.Validator{controlsValidator{g}, scopeValidator{g}}, c.Kernel.Validators...)
	mine := map[blackboard.Slot]map[string][]string{blackboard.Beliefs: {}, blackboard.Actions: {}}
	for _, e := range g.order {
		kc.ActionSpecs = append(kc.ActionSpecs, e.actionSpec())
		for _, d := range e.derives {
			// An owner's own spec for a derived kind takes precedence: it
			// can only add evidence the belief must rest on.
			if !owned[d.Belief] {
				kc.BeliefSpecs = append(kc.BeliefSpecs, kernel.BeliefSpec{Kind: d.Belief, DependsOn: []string{e.resultKind()}})
			}
			mine[blackboard.Beliefs][d.Belief] = []string{audit.DeriverWriter(e.Name)}
		}
		var callers []string
		for _, name := range slices.Sorted(maps.Keys(c.Contracts)) {
			if slices.Contains(c.Contracts[name], e.Name) {
				callers = append(callers, audit.CallerWriter(name))
			}
		}
		mine[blackboard.Actions][e.action()] = callers
	}
	// The gate's reservations replace the owner's for the same kinds.
	for slot, kinds := range c.Kernel.Reserved {
		if mine[slot] == nil {
			mine[slot] = map[string][]string{}
		}
		for kind, writers := range kinds {
			if _, ok := mine[slot][kind]; !ok {
				mine[slot][kind] = writers
			}
		}
	}
	kc.Reserved = mine
	return kc, errs
}

// splitJoined returns the errors errors.Join joined in err, or err alone.
func splitJoined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// checkFallback checks that the fallback is a registered safe fallback
// that is no tool's.
func checkFallback(g *Gate, c Config) problems {
	var errs problems
	safe := g.fallback == kernel.FallbackQueueForReview // the kernel's default
	for _, s := range c.Kernel.ActionSpecs {
		if s.Type == g.fallback {
			safe = s.SafeFallback
		}
	}
	if e := g.tools[g.fallback]; !safe || e != nil {
		errs.add("Fallback", "%q is not a registered safe fallback that is no tool's", g.fallback)
	}
	return errs
}

// compileCallers checks and compiles the contracts and intents, in the
// order of their names, so that the problems come in a stable order.
func compileCallers(g *Gate, c Config) problems {
	var errs problems
	names := func(field, what, name string, tools []string) map[string]bool {
		field = fmt.Sprintf("%s[%q]", field, name)
		if err := checkName(name); err != nil {
			errs.add(field, "%s: %v", what, err)
		}
		set := make(map[string]bool, len(tools))
		for _, tn := range tools {
			if g.tools[tn] == nil {
				errs.add(field, "%s %q lists tool %q, which is not registered", what, name, tn)
			}
			set[tn] = true
		}
		return set
	}
	for _, name := range slices.Sorted(maps.Keys(c.Contracts)) {
		g.contracts[name] = &contract{name: name, value: name, tools: names("Contracts", "caller", name, c.Contracts[name])}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Intents)) {
		if g.intents == nil {
			g.intents = map[string]map[string]bool{}
		}
		g.intents[name] = names("Intents", "intent", name, c.Intents[name])
	}
	return errs
}

// unreachable refuses the configurations under which a tool can never
// work, each refused on every call however the agent behaves:
//
//   - a tool that Requires a belief that is not proposable. A belief kind
//     is proposable when the configuration says how it comes to be: a
//     tool derives it ([Tool.Derives]); or the kernel configuration gives
//     it a belief spec (Kernel.BeliefSpecs: what a planner's proposal of
//     it must rest on) and does not reserve it to no writer; or it
//     reserves it to governance writers (Kernel.Reserved with Writers). A
//     validator makes no kind proposable: it only refuses proposals. (A
//     planner may propose a kind the configuration never names, resting
//     on any percept it chooses: that is the belief shopping a belief spec
//     exists to stop, so a belief a tool's action rests on must be named.)
//   - a Binding on a percept kind that no belief the tool requires rests
//     on. A derived belief rests on its tool's result kind, a belief with
//     a spec on the spec's DependsOn kinds (both, for a derived belief the
//     owner gives a spec); the check is skipped for a tool that requires
//     a belief whose percepts governance code chooses (reserved to writers,
//     with no spec).
//   - a Derive of a belief kind that no tool requires and no kernel action
//     spec lists in MinBeliefs: the gate would derive it for nothing.
//
// The fourth such check, a once-key field the tool's schema lacks, is
// register's.
func unreachable(g *Gate, c Config, derivedBy map[string]*entry) problems {
	var errs problems
	specs := map[string][]string{} // the owner's belief specs' DependsOn
	for _, s := range c.Kernel.BeliefSpecs {
		specs[s.Kind] = s.DependsOn
	}
	writers := map[string][]string{} // the owner's reservations of belief kinds
	for kind, w := range c.Kernel.Reserved[blackboard.Beliefs] {
		writers[kind] = w
	}
	// restsOn returns the percept kinds the configuration makes belief
	// kind b rest on, and whether they are known.
	restsOn := func(b string) ([]string, bool) {
		var kinds []string
		if d := derivedBy[b]; d != nil {
			kinds = append(kinds, d.resultKind())
		}
		deps, spec := specs[b]
		kinds = append(kinds, deps...)
		return kinds, derivedBy[b] != nil || spec
	}
	required := map[string]bool{}
	for _, s := range c.Kernel.ActionSpecs {
		for _, b := range s.MinBeliefs {
			required[b] = true
		}
	}
	for _, e := range g.order {
		for _, b := range e.Requires {
			required[b] = true
		}
	}
	for _, e := range g.order {
		known := true
		var percepts []string
		for i, b := range e.Requires {
			w, reserved := writers[b]
			_, spec := specs[b]
			switch {
			case derivedBy[b] != nil:
			case reserved && len(w) == 0:
				errs.add(toolField(e.Name, fmt.Sprintf("Requires[%d]", i)),
					"belief %q is derived by no tool, and the kernel configuration reserves it to no writer: no one may propose it, so every call would be refused", b)
			case spec || reserved:
			default:
				errs.add(toolField(e.Name, fmt.Sprintf("Requires[%d]", i)),
					"belief %q is derived by no tool, and the kernel configuration has no belief spec for it nor a reservation to a writer: nothing proposes it, so every call would be refused", b)
			}
			kinds, ok := restsOn(b)
			known = known && ok
			percepts = append(percepts, kinds...)
		}
		if known && len(e.Requires) > 0 {
			for i, b := range e.Bindings {
				if !slices.Contains(percepts, b.Percept) {
					errs.add(toolField(e.Name, fmt.Sprintf("Bindings[%d].Percept", i)),
						"percept kind %q is not one the beliefs the tool requires rest on (%q): the binding could never be checked, so every call would be refused", b.Percept, percepts)
				}
			}
		}
		for i, d := range e.derives {
			if !required[d.Belief] {
				errs.add(toolField(e.Name, fmt.Sprintf("Derives[%d].Belief", i)),
					"belief %q is required by no tool and no kernel action spec: the gate would derive it for nothing", d.Belief)
			}
		}
	}
	return errs
}

// New builds a gate and the kernel it governs from cfg (see [Config]), and
// [Gate.Kernel] returns that kernel. New refuses a bad configuration with
// every problem it finds at once ([Config.Validate]:
// [*kernel.ConfigError]s joined, each wrapping
// [blackboard.ErrInvalidInput]): a tool it cannot compile, an action spec
// of the kernel's for a tool's action type, a fallback that is not a
// registered safe fallback, bad contracts, intents, lease or mask keys, a
// bad kernel configuration; and each configuration under which a tool can
// never work, naming the tool and the field:
//
//   - a tool that requires a belief nothing derives or proposes (Requires),
//   - a binding on a percept kind that no belief of the tool rests on
//     (Bindings),
//   - a derive of a belief kind that nothing requires (Derives),
//   - a once-key field the tool's schema does not declare (Once.Fields).
//
// A belief kind is proposable when a tool derives it, or the kernel
// configuration gives it a belief spec (and does not reserve it to no
// writer), or reserves it to governance writers; a derived belief rests on
// its tool's result kind, a belief with a spec on the spec's kinds.
//
// New then records the gate's policy snapshot ([Gate.Policy]: evidence of
// kind [audit.KindPolicy] in the namespace's [audit.PolicyTrace]) unless a gate
// recorded the same hash in the namespace before, and fails, closing the
// kernel, when it cannot: a gate whose policy is not on record decides
// nothing. A gate without tools decides no call and records no snapshot.
// It returns ctx's error if ctx is already done.
func New(ctx context.Context, cfg Config) (*Gate, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g, kc, err := cfg.compile(!rebuild.From(ctx))
	if err != nil {
		return nil, err
	}
	k, err := kernel.New(kc)
	if err != nil {
		return nil, fmt.Errorf("toolgate: kernel: %w", err) // a config error: it wraps blackboard.ErrInvalidInput
	}
	if err := g.init(k, cfg); err != nil {
		return nil, errors.Join(err, k.Close())
	}
	if g.mask != nil {
		g.mask.namespace = kernelhook.Namespace(k) // a keyring's keys are the namespace's own
	}
	pol := g.x.snapshot(cfg).Encode()
	g.policyJSON, g.policyHash = pol.JSON, pol.Hash
	g.policyValue = g.policyHash
	// Fail closed: a gate whose policy is not on record decides nothing.
	// A gate without tools (an approver's, bk approve's) decides no call
	// and records none.
	if len(g.order) > 0 {
		if g.policyID, err = g.x.recordPolicy(ctx); err != nil {
			return nil, errors.Join(fmt.Errorf("toolgate: recording the policy snapshot: %w", err), k.Close())
		}
	}
	return g, nil
}

// init finishes a compiled gate over its kernel k: the handles and
// telemetry.
func (g *Gate) init(k *kernel.Kernel, c Config) error {
	g.k, g.gov, g.planner, g.reader = k, k.Governor(), governedAs(k, audit.GateWriter), k.Handle(blackboard.RoleTool, audit.GateWriter)
	g.x = &executor{k: k, gov: g.gov, reader: g.reader, planner: g.planner, lease: g.lease, fallback: g.fallback, g: g, log: c.Kernel.Logger}
	if g.x.log == nil {
		g.x.log = slog.New(slog.DiscardHandler)
	}
	for _, e := range g.order {
		e.handle = governedAs(k, toolWriter(e.Name))
		e.deriver = governedAs(k, audit.DeriverWriter(e.Name))
	}
	for _, r := range g.contracts {
		r.planner = governedAs(k, audit.CallerWriter(r.name))
	}
	tpSet, tp := telemetry.TracerChoice(c.Kernel.TracerProvider)
	mpSet, mp := telemetry.MeterChoice(c.Kernel.MeterProvider)
	if err := g.x.initTelemetry(tpSet, tp, mpSet, mp); err != nil {
		return configError("Kernel.MeterProvider", "the gate's instruments: %v", err)
	}
	return nil
}
