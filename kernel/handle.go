package kernel

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/canon"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// Reader reads the blackboard of the kernel's namespace. Reads are not
// governed: every handle is a Reader, and [Kernel.Reader] is one that can
// write nothing, for code that only reads (an approver's screen, an
// auditor, the audit package). Records come back as copies. Safe for
// concurrent use.
type Reader interface {
	// View returns the committed state and pending proposals of a trace
	// and, with persistent, the committed persistent-scope records shared
	// with every trace (learned constraints, for instance), over which the
	// trace's own take precedence for the same slot and kind.
	// Records whose TTL has run out are left out, as of now; a view never
	// writes to the store. The payloads are copies the caller may keep.
	View(ctx context.Context, traceID string, persistent bool) (View, error)
	// Get, Find, Trace and List read records; they return copies.
	Get(ctx context.Context, id string) (blackboard.Record, error)
	Find(ctx context.Context, traceID string, slot blackboard.Slot, kind string) (blackboard.Record, error)
	Trace(ctx context.Context, traceID string) iter.Seq2[blackboard.Record, error]
	List(ctx context.Context, slot blackboard.Slot, f store.Filter) iter.Seq2[blackboard.Record, error]
}

// Handle is what every role-bound handle offers: its identity, read
// access to the blackboard, and writes governed by the handle's concrete
// type and the permission table.
type Handle interface {
	Reader
	// Role is the authority the handle writes with.
	Role() blackboard.Role
	// Name is the writer id recorded in provenance.
	Name() string
	// Write asks the kernel to store one record and returns its id. See
	// [Handle.Write].
	Write(ctx context.Context, e Entry) (string, error)
}

// reads is the read access every handle shares, and [Kernel.Reader].
type reads struct{ k *Kernel }

// Reader returns a read-only handle on the kernel's namespace.
func (k *Kernel) Reader() Reader { return reads{k} }

// handle is the part every role shares.
type handle struct {
	reads
	role blackboard.Role
	name string
}

// Role returns the handle's role.
func (h *handle) Role() blackboard.Role { return h.role }

// Name returns the writer id the handle records in provenance.
func (h *handle) Name() string { return h.name }

// Write stores one record with the handle's authority and returns its id
// ([Reader.Get] reads the record: the caller knows what it wrote). Mode
// defaults to the one the role writes the slot in. A slot or mode outside
// the role's authority is [blackboard.ErrPermission]; bad input is [blackboard.ErrInvalidInput],
// [blackboard.ErrInvalidPayload], [ErrPayloadTooLarge], [ErrInvalidProposal] or
// [ErrInvalidReference]. An entry with once-keys ([Entry.OnceKeys]) is
// [blackboard.ErrPermission]: only the [Governor] claims them. On any error nothing
// is stored.
func (h *handle) Write(ctx context.Context, e Entry) (string, error) {
	if !handed(h.role) {
		return "", h.refused("write")
	}
	w, err := h.k.write(ctx, h.role, h.name, e, false, nil)
	return w.ID, err
}

// View returns the trace's committed payloads by slot and kind and its
// pending proposals.
func (h reads) View(ctx context.Context, traceID string, persistent bool) (View, error) {
	return h.k.view(ctx, traceID, persistent)
}

// Get returns a copy of the record with that id, or [blackboard.ErrNotFound] (also
// for a record of another namespace).
func (h reads) Get(ctx context.Context, id string) (blackboard.Record, error) {
	rec, err := h.k.store.Get(ctx, id)
	if err != nil {
		return blackboard.Record{}, err
	}
	if rec.Namespace != h.k.namespace {
		return blackboard.Record{}, newErr("get", id, "", blackboard.ErrNotFound, "record of another namespace")
	}
	return rec.Clone(), nil
}

// Find returns a copy of the latest ACTIVE record of kind in slot of the
// trace, or [blackboard.ErrNotFound].
func (h reads) Find(ctx context.Context, traceID string, slot blackboard.Slot, kind string) (blackboard.Record, error) {
	rec, err := h.k.store.FindActive(ctx, h.k.namespace, traceID, slot, kind)
	if err != nil {
		return blackboard.Record{}, err
	}
	if rec.Namespace != h.k.namespace {
		return blackboard.Record{}, newErr("find", rec.ID, "", blackboard.ErrNotFound, "record of another namespace")
	}
	return rec.Clone(), nil
}

// Trace streams copies of every record of one trace of the kernel's
// namespace in append order.
func (h reads) Trace(ctx context.Context, traceID string) iter.Seq2[blackboard.Record, error] {
	return h.k.scoped(h.k.store.ListTrace(ctx, h.k.namespace, traceID))
}

// List streams copies of the records of a slot, across the traces of the
// kernel's namespace, that match f (whose Namespace is set to the
// kernel's).
func (h reads) List(ctx context.Context, slot blackboard.Slot, f store.Filter) iter.Seq2[blackboard.Record, error] {
	f.Namespace = h.k.namespace
	return h.k.scoped(h.k.store.ListSlot(ctx, slot, f))
}

// scoped clones the records of seq that belong to the kernel's namespace.
func (k *Kernel) scoped(seq iter.Seq2[blackboard.Record, error]) iter.Seq2[blackboard.Record, error] {
	return func(yield func(blackboard.Record, error) bool) {
		for r, err := range seq {
			if err == nil && r.Namespace != k.namespace {
				continue
			}
			if !yield(r.Clone(), err) {
				return
			}
		}
	}
}

// proposer is the part shared by the roles that propose (planner,
// simulator): asking the kernel to decide a proposal.
type proposer struct{ handle }

// Commit asks the kernel to decide a pending proposal of the trace: it
// validates it and either commits it (Decision.Code COMMITTED or
// PLAN_FEASIBLE) or invalidates it with the rejection code. A rejection is
// not an error. Committing anything but an ACTIVE proposal of this trace
// fails with [ErrInvalidProposal] (code INVALID_PROPOSAL); a proposal in a
// slot the role may not propose in fails with [blackboard.ErrPermission].
func (p *proposer) Commit(ctx context.Context, traceID, proposalID string) (Decision, error) {
	if !handed(p.role) {
		return Decision{}, p.refused("commit")
	}
	return p.k.commit(ctx, p.role, traceID, proposalID)
}

// Submit proposes e and has the kernel decide it at once: the same
// outcome as Write then Commit, in one atomic step, so the proposal and its
// decision land together. An entry with once-keys is [blackboard.ErrPermission] and
// stores nothing.
func (p *proposer) Submit(ctx context.Context, e Entry) (Decision, error) {
	if !handed(p.role) {
		return Decision{}, p.refused("submit")
	}
	return p.k.submit(ctx, p.role, p.name, e, false, nil)
}

// Proposer is the handle of a planner or a simulator: it proposes records
// its role may propose (a planner beliefs, plans, predictions and actions;
// a simulator predictions) and asks the kernel to decide them. It can
// commit nothing itself.
type Proposer struct{ proposer }

// Symbolic is the handle of a symbolic validator: it commits constraints.
type Symbolic struct{ handle }

// Handle returns the handle of a worker of the given role writing as
// name: [blackboard.RoleTool] (a perception source: it commits percepts),
// [blackboard.RoleEvidence] (an evidence validator: it commits evidence
// artifacts of its own; those of committed beliefs are the kernel's),
// [blackboard.RolePlanner] or [blackboard.RoleSimulator] (their writes
// propose; [Kernel.Proposer] also decides) or [blackboard.RoleSymbolic]
// ([Kernel.Symbolic] also commits constraints). The handle writes only
// what its role may (the paper's Table 1). No handle has the kernel's or
// an approver's role, which only the [Governor] writes with: a handle
// asked for one, or for an unknown role, writes nothing
// ([blackboard.ErrPermission]).
func (k *Kernel) Handle(role blackboard.Role, name string) Handle {
	return &handle{reads{k}, role, name}
}

// Proposer returns the handle of a planner ([blackboard.RolePlanner]) or
// a simulator ([blackboard.RoleSimulator]) writing as name, which also
// asks the kernel to decide its proposals. Any other role gets a handle
// with that role's authority (see [Kernel.Handle]), which can propose
// nothing.
func (k *Kernel) Proposer(role blackboard.Role, name string) *Proposer {
	return &Proposer{proposer{handle{reads{k}, role, name}}}
}

// Symbolic returns a symbolic-validator handle writing as name.
func (k *Kernel) Symbolic(name string) *Symbolic {
	return &Symbolic{handle{reads{k}, blackboard.RoleSymbolic, name}}
}

// handed reports whether a handle may have role: every role of the
// permission table but the approver's, whose writes go through the
// Governor.
func handed(role blackboard.Role) bool {
	switch role {
	case blackboard.RoleTool, blackboard.RolePlanner, blackboard.RoleSymbolic, blackboard.RoleEvidence, blackboard.RoleSimulator:
		return true
	}
	return false
}

// refused is the error of a write by a handle with a role no handle has.
func (h *handle) refused(op string) error {
	return newErr(op, "", reason.PermissionDenied, blackboard.ErrPermission, fmt.Sprintf("no handle writes with role %s", h.role))
}

// Constraint is the declarative rule a symbolic validator commits (paper
// §8.2).
type Constraint struct {
	// Name is the constraint's name; blocked codes are built from it.
	Name string
	// Enabled says whether it is enforced.
	Enabled bool
	// BlocksField is the plan-step or action field that blocks when truthy.
	BlocksField string
	// BindPercept, if set, names a percept kind whose BlocksField value the
	// kernel reads from the current observation instead of the proposal; a
	// proposal that disagrees with it is FIELD_MISMATCH. The observation
	// must pass the evidence checks, or the constraint blocks (fail closed).
	BindPercept string
	// AppliesTo names the action types the constraint guards. Empty means
	// every type except safe fallbacks.
	AppliesTo []string
	// Extra holds further domain fields stored with the constraint.
	Extra blackboard.Payload
}

// entry is the entry that commits c in the trace with the given scope,
// for a kernel whose payloads are at most limit bytes. Without Extra its
// payload is built here in canonical form and, when valid, stored as it
// is: it holds nothing of the caller's.
func (c Constraint) entry(traceID string, scope blackboard.Scope, limit int) Entry {
	e := Entry{TraceID: traceID, Slot: blackboard.Constraints, Kind: c.Name, Scope: scope}
	e.Payload = c.payload(c.Extra == nil)
	e.owned = c.Extra == nil && c.canonical(limit)
	return e
}

// canonical reports whether c's payload, as payload(true) builds it, is
// valid and within limit (as [normalizePayload] counts it), checking the
// strings it is built of rather than walking the map built from them.
func (c Constraint) canonical(limit int) bool {
	n := normalizer{limit: limit}
	keys := 3 // name, blocks_field, enabled
	strs := [...]string{keyName, c.Name, keyBlocksField, c.BlocksField, keyEnabled, keyBindPercept, c.BindPercept}
	end := 5
	if c.BindPercept != "" {
		keys, end = keys+1, 7
	}
	if len(c.AppliesTo) > 0 {
		keys++
		if n.str(keyAppliesTo, "key") != nil || n.grow(2+commas(len(c.AppliesTo))) != nil {
			return false
		}
		for _, t := range c.AppliesTo {
			if n.str(t, "string") != nil {
				return false
			}
		}
	}
	if n.grow(2+keys+commas(keys)+boolSize(c.Enabled)) != nil {
		return false
	}
	for _, s := range strs[:end] {
		if n.str(s, "string") != nil {
			return false
		}
	}
	return true
}

// Payload renders c as a constraint payload.
func (c Constraint) Payload() blackboard.Payload { return c.payload(false) }

// payload renders c; canonical lists its action types as the []any the
// kernel stores (the payload is then the kernel's own, holding nothing of
// the caller's), otherwise as a copy of c.AppliesTo.
func (c Constraint) payload(canonical bool) blackboard.Payload {
	p := make(blackboard.Payload, len(c.Extra)+5)
	for key, v := range c.Extra {
		p[key] = v
	}
	p[keyName] = c.Name
	p[keyEnabled] = c.Enabled
	p[keyBlocksField] = c.BlocksField
	if c.BindPercept != "" {
		p[keyBindPercept] = c.BindPercept
	}
	switch {
	case len(c.AppliesTo) == 0:
	case canonical:
		types := make([]any, len(c.AppliesTo))
		for i, t := range c.AppliesTo {
			types[i] = t
		}
		p[keyAppliesTo] = types
	default:
		p[keyAppliesTo] = slices.Clone(c.AppliesTo)
	}
	return p
}

// CommitConstraint commits c in the trace with the given scope (zero means
// episode) and returns the record's id. Its kind is its name.
func (s *Symbolic) CommitConstraint(ctx context.Context, traceID string, c Constraint, scope blackboard.Scope) (string, error) {
	return s.Write(ctx, c.entry(traceID, scope, s.k.maxPayload))
}

// Governor is the capability to write what only governance code may
// write: records that follow a decision or a write in the same batch
// ([Follow]), records with the kernel's own role (the gate's decision
// records) or an approver's, and once-keys ([Entry.OnceKeys]). Every
// other handle refuses once-keys with [blackboard.ErrPermission] and can name no
// role but its own, so that a tool cannot claim a key another action or
// the gate derives, and a planner cannot put a forged decision record in
// front of an approver. The kernel's owner gets it from [Kernel.Governor]
// and passes it only to its own governance code (the tool gate); it must
// never reach a tool, a planner or a model's code. Safe for concurrent
// use.
type Governor struct{ k *Kernel }

// Governor returns the kernel's governance capability. Whoever holds the
// Kernel is its owner and may call it; the handles the owner hands out
// cannot reach it.
func (k *Kernel) Governor() *Governor { return &Governor{k} }

// Follow is a record the [Governor] appends in the same batch as a
// decision or a write, or on its own ([Governor.Append]). Role is the
// authority it is written with: [blackboard.RoleKernel] (writer "kernel"; an
// evidence record, such as a decision record), [blackboard.RoleTool] (a percept) or
// [blackboard.RoleApprover] (evidence, such as an approval); Writer names the tool or
// the approver and is ignored for RoleKernel. The entry is checked as any
// handle's would be (the role's slots and modes, names, payload); it must
// be in the trace of what it follows (an empty TraceID means that trace),
// its references may name records of the same batch, and its OnceKeys are
// claimed in the batch (only a write's: a decision's follow records claim
// none, [blackboard.ErrPermission]).
type Follow struct {
	Role   blackboard.Role
	Writer string
	Entry  Entry
}

// Submit is [Proposer.Submit] for a planner writing as writer, with
// entries that follow the decision in the same batch: then, when not nil,
// is called with the decision once the kernel has made it and before
// anything is written (again with the new decision when a concurrent
// writer forces the kernel to decide again), and with a copy of the
// committed record (zero when the proposal was refused), the callback's
// to keep, so that governance code (the gate's decision record, the job
// that runs a committed action) needs no read of what the batch commits;
// it returns the records to append after the decision's own. Their ids are in [Decision.Appended].
// If then returns an error, nothing is written and Submit returns it; a
// follow record the kernel refuses (see [Follow]) fails the Submit and
// writes nothing. The entry's OnceKeys (the submitter's own, besides the
// once-key an action spec names) are claimed in the same batch by the
// committed record, or by the proposal when it is refused, so that
// [Governor.ClaimedBy] finds what the submission came to; a key already
// claimed fails the Submit with [blackboard.ErrDuplicateKey] and writes
// nothing. Follow records claim none.
func (g *Governor) Submit(ctx context.Context, writer string, e Entry, then func(d Decision, committed blackboard.Record) ([]Follow, error)) (Decision, error) {
	return g.k.submit(ctx, blackboard.RolePlanner, writer, e, true, then)
}

// written is what a write appended, in one batch: the id of the record
// and those of the records that follow it.
type written struct {
	ID       string
	Appended []string
}

// Write is [Handle.Write] for a tool writing as writer, with
// [Entry.OnceKeys] allowed and with entries that follow the record in the
// same batch: then, when not nil, is called with a copy of the record (its
// id set; the callback's to keep) before anything is written, and returns
// the records to append after it, so that governance code holds no alias
// of what the store keeps. Write returns the id of the record written and
// those of its follow records, in order, so that the caller never searches
// the trace for what it has just written.
// A key already claimed fails the write with [blackboard.ErrDuplicateKey] and stores
// nothing; so does an error from then, which Write returns.
func (g *Governor) Write(ctx context.Context, writer string, e Entry, then func(blackboard.Record) ([]Follow, error)) (id string, appended []string, err error) {
	w, err := g.k.write(ctx, blackboard.RoleTool, writer, e, true, then)
	return w.ID, w.Appended, err
}

// Append writes one record on its own, with the role f names (see
// [Follow]): a decision record about a call refused before it reached the
// kernel, or an approval. f.Entry.TraceID names the trace. It returns a
// copy of the record written.
func (g *Governor) Append(ctx context.Context, f Follow) (blackboard.Record, error) {
	return g.k.appendFollow(ctx, f)
}

// CommitConstraintOnce commits c in persistent scope in the trace, unless
// a constraint of its name was committed this way before in the kernel's
// namespace, by this or any other process sharing the store: the kernel
// claims a once-key it derives from the namespace and the name in the same
// batch as the record, so that of any number of concurrent commits of one
// name exactly one lands. It returns the id of the record that holds the
// name's key: the new one, or (created false) the one that claimed it
// before. It fails with
// [blackboard.ErrInvalidInput] when the store does not enforce once-keys, and with the
// errors of [Symbolic.CommitConstraint]; on any error nothing is stored.
// Safe for concurrent use.
func (s *Symbolic) CommitConstraintOnce(ctx context.Context, traceID string, c Constraint) (id string, created bool, err error) {
	key, err := constraintKey(s.k.namespace, c.Name)
	if err != nil {
		return "", false, err
	}
	e := c.entry(traceID, blackboard.ScopePersistent, s.k.maxPayload)
	e.OnceKeys = []string{key}
	// The key is the kernel's own, derived here: the write claims it with
	// the kernel's authority, as a commit claims an action's once-key.
	w, err := s.k.write(ctx, s.role, s.name, e, true, nil)
	if !errors.Is(err, blackboard.ErrDuplicateKey) {
		return w.ID, err == nil, err
	}
	if id, err = s.k.claimedBy(ctx, key); err != nil {
		return "", false, err
	}
	return id, false, nil
}

// constraintKey is the once-key of a constraint name committed once in a
// namespace: a digest of both, so that no two (namespace, name) pairs
// share a key and any name fits a key's length.
func constraintKey(namespace, name string) (string, error) {
	d, err := canon.Digest([]any{namespace, name})
	if err != nil {
		return "", newErr("commit constraint", "", reason.InvalidInput, blackboard.ErrInvalidInput, err.Error())
	}
	return "kernel/constraint/" + d, nil
}

var (
	_ Handle = (*handle)(nil)
	_ Handle = (*Proposer)(nil)
	_ Handle = (*Symbolic)(nil)
)
