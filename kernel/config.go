package kernel

import (
	"cmp"
	"crypto"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/chain"
	"github.com/blackboardkernel/bk/internal/telemetry"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
)

// Config is what [New] builds a kernel from. The zero Config is a working
// kernel: an in-memory store, the system clock, the paper's thresholds,
// the default namespace and queue_for_review as the one safe fallback.
// Each field's zero value means its documented default. New copies what it
// keeps, so the caller may reuse or change a Config after New returns.
type Config struct {
	// Store holds the records. nil: a fresh [memstore.Store] that the
	// kernel owns and [Kernel.Close] closes. A store given here stays the
	// caller's: Kernel.Close leaves it open.
	Store store.Store
	// Clock is the source of time for timestamps and TTL expiry. nil:
	// time.Now.
	Clock func() time.Time
	// Namespace is the namespace the kernel works in. "":
	// [blackboard.DefaultNamespace]. Traces, persistent records,
	// once-keys and learned constraints belong to a namespace: kernels of
	// different namespaces sharing one store do not see each other's, and
	// one trace id in two namespaces is two traces. A trace id beginning
	// "bk.policy." is reserved to the namespace it names
	// ([blackboard.ErrPermission] for any other).
	Namespace string
	// MinConfidence is the confidence gate, in (0,1]: evidence below it is
	// LOW_CONFIDENCE. 0: 0.5.
	MinConfidence float64
	// ConflictThreshold is the arbitration threshold, in (0,1]: a
	// conflicted percept at or above it is arbitrated, below it the belief
	// is UNRESOLVED_CONFLICT. 0: 0.7.
	ConflictThreshold float64
	// MaxPayloadBytes limits the JSON size of a payload. 0: 1 MiB
	// (1<<20 bytes).
	MaxPayloadBytes int
	// ActionSpecs are the action types' specs, one per type. A spec for
	// queue_for_review replaces the default safe fallback of that type.
	ActionSpecs []ActionSpec
	// StrictActions makes every action type without a spec (including
	// case or whitespace variants of one with a spec) UNKNOWN_ACTION_TYPE.
	StrictActions bool
	// BeliefSpecs are the belief kinds' specs, one per kind.
	BeliefSpecs []BeliefSpec
	// Validators are custom checks that run after the built-in ones, in
	// order.
	Validators []Validator
	// SharedPersistent lists, by slot, the kinds whose persistent records,
	// written in any trace of the namespace, appear in every trace's views
	// (a [Reader.View] with persistent) and may be cited by its records.
	// Without it only persistent constraints are shared: a persistent
	// belief or action written in one trace never becomes another trace's
	// state.
	SharedPersistent map[blackboard.Slot][]string
	// Reserved reserves kinds of the beliefs and actions slots to
	// governance code: by slot, then kind, the writer ids as which the
	// [Governor] alone may propose the kind. A proposal of a reserved kind
	// by any other handle, or by the Governor as another writer, is
	// [blackboard.ErrPermission] (code PERMISSION_DENIED) and stores
	// nothing; a kind with no writers no one may propose. The tool gate
	// reserves each belief its tools derive to the tool's deriver and each
	// tool's action type to the callers whose contracts list the tool, so
	// that no planner overrides a derived belief, and no action of a tool
	// commits (or takes its once-key) but one the gate proposed and runs.
	Reserved map[blackboard.Slot]map[string][]string
	// Logger logs each decision at debug level, with the attributes of the
	// decision's span (namespace, trace id, slot, kind, record id, role,
	// code, rule, failed record). nil: nothing is logged.
	Logger *slog.Logger
	// TracerProvider is the OpenTelemetry provider the kernel traces with:
	// writes, decisions, views, expiries and the Governor's appends each
	// get a span, joining the trace of the caller's span in ctx (so that a
	// tool call's decision nests under the framework's execute_tool span).
	// nil: the global provider, which is a no-op until the application
	// installs an SDK (otel.SetTracerProvider); until then the kernel
	// starts no span at all. A no-op provider (trace/noop) turns tracing
	// off altogether, at no cost. The tool-call gate traces with its
	// kernel's provider.
	TracerProvider trace.TracerProvider
	// MeterProvider is the OpenTelemetry provider the kernel records
	// metrics with (see docs/observability.md): decisions by slot, kind and
	// code, decision latency, expiries. nil: the global provider, a no-op
	// until the application installs an SDK; a no-op provider
	// (metric/noop) turns metrics off. The tool-call gate measures with its
	// kernel's provider.
	MeterProvider metric.MeterProvider
	// Signer, when set, makes the kernel sign checkpoints of its
	// namespace's hash chains (package chain): the heads of the traces it
	// wrote since its last checkpoint, every CheckpointEvery, at
	// [Kernel.Checkpoint] and at [Kernel.Close], recorded in the store
	// (trace "bk.checkpoints" of the namespace, which no handle may
	// write) and handed to OnCheckpoint. With one, `bk verify` and an
	// exported evidence bundle prove a history against the last
	// checkpoint the verifier trusts, even one whose tail was rewritten.
	// Its public key must be Ed25519 (crypto/ed25519's private key, or a
	// KMS or HSM behind crypto.Signer), and the store a [store.Chainer].
	Signer crypto.Signer
	// CheckpointEvery is how often a kernel with a Signer signs a
	// checkpoint: 0 means every minute; a negative value only at
	// [Kernel.Checkpoint] and Close.
	CheckpointEvery time.Duration
	// OnCheckpoint, when set, receives every checkpoint the kernel
	// records, so that the application keeps it elsewhere (a log line, a
	// second database): `bk verify --trust` then catches a store whose
	// newest checkpoints were dropped. It runs on the goroutine that made
	// the checkpoint.
	OnCheckpoint func(chain.Checkpoint)
}

// ConfigError is one problem of a [Config]: [Config.Validate] and [New]
// return every problem at once, joined (errors.Join), each a *ConfigError
// for errors.As. It wraps [blackboard.ErrInvalidInput]. The tool gate
// reports the problems of its own configuration (toolgate.Config) as
// ConfigErrors too, so that one type serves both.
type ConfigError struct {
	// Field names the field at fault, as Go code would reach it from the
	// configuration: "MinConfidence", "ActionSpecs[2].Once.Fields"; the
	// gate's `Tools["issue_refund"].Requires[0]`, "Kernel.MinConfidence".
	Field string
	// Problem says what is wrong with it.
	Problem string
}

// Error names the field and the problem: "config: " Field ": " Problem.
func (e *ConfigError) Error() string { return "config: " + e.Field + ": " + e.Problem }

// Unwrap returns [blackboard.ErrInvalidInput].
func (e *ConfigError) Unwrap() error { return blackboard.ErrInvalidInput }

// Validate reports every problem of c at once: nil, or the
// [*ConfigError]s joined. A zero field is never a problem (it means its
// default).
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, &ConfigError{Field: field, Problem: fmt.Sprintf(format, a...)})
	}
	if !unit(c.MinConfidence) {
		bad("MinConfidence", "%v is outside [0,1]", c.MinConfidence)
	}
	if !unit(c.ConflictThreshold) {
		bad("ConflictThreshold", "%v is outside [0,1]", c.ConflictThreshold)
	}
	if p := checkSigner(&c); p != "" {
		bad("Signer", "%s", p)
	}
	if c.MaxPayloadBytes < 0 {
		bad("MaxPayloadBytes", "%d is negative", c.MaxPayloadBytes)
	}
	if c.Namespace != "" {
		if err := checkName("namespace", c.Namespace); err != nil {
			bad("Namespace", "%v", err)
		}
	}
	for _, slot := range slices.SortedFunc(maps.Keys(c.SharedPersistent), compareSlots) {
		field := fmt.Sprintf("SharedPersistent[%v]", slot)
		if !slot.Valid() {
			bad(field, "not a slot")
		}
		if kinds := c.SharedPersistent[slot]; len(kinds) == 0 || slices.Contains(kinds, "") {
			bad(field, "needs non-empty kinds")
		}
	}
	types := map[string]bool{}
	for i, s := range c.ActionSpecs {
		field := fmt.Sprintf("ActionSpecs[%d]", i)
		switch {
		case s.Type == "":
			bad(field+".Type", "empty")
		case types[s.Type]:
			bad(field+".Type", "%q has an earlier spec", s.Type)
		}
		types[s.Type] = true
		if o := s.Once; o != nil {
			if len(o.Fields) == 0 || slices.Contains(o.Fields, "") {
				bad(field+".Once.Fields", "a once-key needs non-empty fields")
			}
			if o.Limit < 0 {
				bad(field+".Once.Limit", "%d is negative", o.Limit)
			}
		}
	}
	kinds := map[string]bool{}
	for i, s := range c.BeliefSpecs {
		field := fmt.Sprintf("BeliefSpecs[%d]", i)
		switch {
		case s.Kind == "":
			bad(field+".Kind", "empty")
		case kinds[s.Kind]:
			bad(field+".Kind", "%q has an earlier spec", s.Kind)
		}
		kinds[s.Kind] = true
		if len(s.DependsOn) == 0 || slices.Contains(s.DependsOn, "") {
			bad(field+".DependsOn", "needs non-empty percept kinds")
		}
	}
	for _, slot := range slices.Sorted(maps.Keys(c.Reserved)) {
		field := fmt.Sprintf("Reserved[%v]", slot)
		if slot != blackboard.Beliefs && slot != blackboard.Actions {
			bad(field, "not the beliefs or the actions slot")
		}
		for _, kind := range slices.Sorted(maps.Keys(c.Reserved[slot])) {
			if kind == "" {
				bad(field, "an empty kind")
			}
			if slices.Contains(c.Reserved[slot][kind], "") {
				bad(fmt.Sprintf("%s[%q]", field, kind), "an empty writer")
			}
		}
	}
	for i, v := range c.Validators {
		if f, isFunc := v.(ValidatorFunc); v == nil || isFunc && f == nil {
			bad(fmt.Sprintf("Validators[%d]", i), "nil")
		}
	}
	return errors.Join(errs...)
}

// New returns a Kernel built from cfg, whose zero fields take their
// defaults (see [Config]). It returns [Config.Validate]'s error, every
// problem of cfg at once, for a bad configuration.
func New(cfg Config) (*Kernel, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	k := &Kernel{
		store:             cfg.Store,
		now:               cfg.Clock,
		minConfidence:     cmp.Or(cfg.MinConfidence, defaultMinConfidence),
		conflictThreshold: cmp.Or(cfg.ConflictThreshold, defaultConflictThreshold),
		maxPayload:        cmp.Or(cfg.MaxPayloadBytes, defaultMaxPayloadBytes),
		namespace:         cmp.Or(cfg.Namespace, blackboard.DefaultNamespace),
		strictActions:     cfg.StrictActions,
		validators:        slices.Clone(cfg.Validators),
		log:               cfg.Logger,
	}
	if k.now == nil {
		k.now = time.Now
	}
	for _, s := range cfg.ActionSpecs {
		s.MinBeliefs = slices.Clone(s.MinBeliefs) // the caller keeps its slices
		s.Predictors = slices.Clone(s.Predictors)
		if s.Once != nil {
			o := *s.Once
			o.Fields = slices.Clone(o.Fields)
			s.Once = &o
		}
		if k.specs == nil {
			k.specs = make(map[string]ActionSpec, len(cfg.ActionSpecs))
		}
		k.specs[s.Type] = s
	}
	for _, s := range cfg.BeliefSpecs {
		s.DependsOn = slices.Clone(s.DependsOn)
		if k.beliefSpecs == nil {
			k.beliefSpecs = make(map[string]BeliefSpec, len(cfg.BeliefSpecs))
		}
		k.beliefSpecs[s.Kind] = s
	}
	for slot, kinds := range cfg.Reserved {
		for kind, writers := range kinds {
			if k.reserved == nil {
				k.reserved = make(map[reservation][]string)
			}
			k.reserved[reservation{slot, kind}] = slices.Clone(writers)
		}
	}
	for _, slot := range slices.SortedFunc(maps.Keys(cfg.SharedPersistent), compareSlots) {
		for _, kind := range cfg.SharedPersistent[slot] {
			k.shared = append(k.shared, sharedKind{slot, kind})
		}
	}
	k.tracerSet, k.tracerProvider = telemetry.TracerChoice(cfg.TracerProvider)
	k.meterSet, k.meterProvider = telemetry.MeterChoice(cfg.MeterProvider)
	k.thresholds = defaultThresholds
	if k.minConfidence != defaultMinConfidence || k.conflictThreshold != defaultConflictThreshold {
		k.thresholds = [2]any{k.minConfidence, k.conflictThreshold}
	}
	if k.store == nil {
		k.store, k.ownsStore = memstore.New(), true
	}
	if k.log == nil {
		k.log = discardLogger
	}
	k.initTelemetry()
	k.startSigning(&cfg)
	return k, nil
}

// reservation is a slot and a kind [Config.Reserved] reserves.
type reservation struct {
	slot blackboard.Slot
	kind string
}

// sharedKind is a persistent slot and kind shared across traces.
type sharedKind struct {
	slot blackboard.Slot
	kind string
}

// compareSlots orders slots as the paper's table does ([blackboard.AllSlots]),
// the empty slot first and unknown ones last by name: a configuration's
// slots are checked, and its errors listed, in that order.
func compareSlots(a, b blackboard.Slot) int {
	rank := func(s blackboard.Slot) int {
		if s == "" {
			return 0
		}
		if i := slices.Index(blackboard.AllSlots(), s); i >= 0 {
			return 1 + i
		}
		return 8
	}
	return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a, b))
}
