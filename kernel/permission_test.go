package kernel_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// table1 is the paper's Table 1, written out independently of the kernel's
// own table so that a wrong cell there fails here.
var table1 = map[blackboard.Role]map[blackboard.Slot]blackboard.Mode{
	blackboard.RoleTool:      {blackboard.Percepts: blackboard.ModeCommit},
	blackboard.RolePlanner:   {blackboard.Beliefs: blackboard.ModePropose, blackboard.Plans: blackboard.ModePropose, blackboard.Predictions: blackboard.ModePropose, blackboard.Actions: blackboard.ModePropose},
	blackboard.RoleSymbolic:  {blackboard.Constraints: blackboard.ModeCommit},
	blackboard.RoleEvidence:  {blackboard.Evidence: blackboard.ModeCommit},
	blackboard.RoleSimulator: {blackboard.Predictions: blackboard.ModePropose},
}

// validPayload is a well-formed payload for each slot, so that an allowed
// cell can only fail for a reason the test did not intend.
var validPayload = map[blackboard.Slot]blackboard.Payload{
	blackboard.Percepts:    {"amount": 1.0},
	blackboard.Beliefs:     belief(true, "charge"),
	blackboard.Constraints: {"blocks_field": "is_duplicate"},
	blackboard.Plans:       plan(step(kernel.FallbackQueueForReview)),
	blackboard.Evidence:    {"note": "checked"},
	blackboard.Predictions: prediction("alert", 1),
	blackboard.Actions:     action(),
}

func (f *fixture) handles() []kernel.Handle {
	return []kernel.Handle{f.tool, f.planner, f.sym, f.ev, f.sim}
}

func TestPermissionTable(t *testing.T) {
	f := newFixture(t)
	for _, h := range f.handles() {
		for _, slot := range blackboard.AllSlots() {
			// Mode 0 asks for the role's own mode for the slot, if any.
			for _, mode := range []blackboard.Mode{"", blackboard.ModePropose, blackboard.ModeCommit} {
				name := fmt.Sprintf("%s/%s/%s", h.Role(), slot, mode)
				own, has := table1[h.Role()][slot]
				allowed := has && (mode == "" || mode == own)
				if mode != "" && kernel.Allowed(h.Role(), slot, mode) != allowed {
					t.Errorf("%s: Allowed = %v, Table 1 says %v", name, !allowed, allowed)
				}
				f.mark()
				rec, err := h.Write(f.ctx, kernel.Entry{TraceID: "perm", Slot: slot, Mode: mode, Kind: "k", Payload: validPayload[slot]})
				if !allowed {
					wantErr(t, err, blackboard.ErrPermission, reason.PermissionDenied)
					f.unchanged()
					continue
				}
				if err != nil {
					t.Errorf("%s: %v", name, err)
					continue
				}
				wantReason := reason.Code("")
				if own == blackboard.ModeCommit {
					wantReason = reason.Committed
				}
				got := f.get(rec)
				if got.Mode != own || got.Provenance.Role != h.Role() || got.Provenance.Writer != h.Name() ||
					got.Status != blackboard.StatusActive || got.Reason != wantReason || got.ID != rec {
					t.Errorf("%s: stored %+v", name, got)
				}
			}
		}
	}
	if t.Failed() {
		return
	}
	// Each allowed cell was written twice: mode 0 and its own mode.
	cells := 0
	for _, slots := range table1 {
		cells += len(slots)
	}
	if n := f.store.Len(); n != 2*cells || cells != 8 {
		t.Errorf("store holds %d records for %d allowed cells", n, cells)
	}
}

func TestNoHandleActsAsKernel(t *testing.T) {
	for _, role := range []blackboard.Role{"", blackboard.RoleKernel, "Kernel", "root"} {
		for _, slot := range blackboard.AllSlots() {
			for _, mode := range []blackboard.Mode{blackboard.ModePropose, blackboard.ModeCommit} {
				if kernel.Allowed(role, slot, mode) {
					t.Errorf("Allowed(%s, %s, %s)", role, slot, mode)
				}
			}
		}
	}
	f := newFixture(t)
	roleType := reflect.TypeFor[blackboard.Role]()
	for _, h := range f.handles() {
		if h.Role() == blackboard.RoleKernel || !h.Role().Valid() {
			t.Errorf("%T has role %s", h, h.Role())
		}
		// No method takes a Role, so a caller has no way to claim one.
		typ := reflect.TypeOf(h)
		for i := range typ.NumMethod() {
			m := typ.Method(i)
			for j := range m.Type.NumIn() {
				if m.Type.In(j) == roleType {
					t.Errorf("%T.%s takes a Role", h, m.Name)
				}
			}
		}
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[kernel.Entry](), reflect.TypeFor[kernel.Constraint]()} {
		for i := range typ.NumField() {
			if typ.Field(i).Type == roleType {
				t.Errorf("%s has a Role field %s", typ, typ.Field(i).Name)
			}
		}
	}
}

// TestNoHandleForGovernorRoles: a handle asked for the kernel's or an
// approver's role, or for no role, writes, commits and submits nothing.
func TestNoHandleForGovernorRoles(t *testing.T) {
	f := newFixture(t)
	f.groundedBelief(tr)
	p, err := f.planner.Write(f.ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Actions, Kind: "issue_refund", Payload: action("refund_due")})
	if err != nil {
		t.Fatal(err)
	}
	f.mark()
	for _, role := range []blackboard.Role{"", blackboard.RoleKernel, blackboard.RoleApprover, "root"} {
		for _, slot := range blackboard.AllSlots() {
			for _, mode := range []blackboard.Mode{"", blackboard.ModePropose, blackboard.ModeCommit} {
				_, err := f.k.Handle(role, "forger").Write(f.ctx, kernel.Entry{TraceID: tr, Slot: slot, Mode: mode, Kind: "k", Payload: validPayload[slot]})
				wantErr(t, err, blackboard.ErrPermission, reason.PermissionDenied)
			}
		}
		h := f.k.Proposer(role, "forger")
		_, err := h.Commit(f.ctx, tr, p)
		wantErr(t, err, blackboard.ErrPermission, reason.PermissionDenied)
		_, err = h.Submit(f.ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Actions, Kind: "issue_refund", Payload: action("refund_due")})
		wantErr(t, err, blackboard.ErrPermission, reason.PermissionDenied)
	}
	f.unchanged()
}

// TestCommitAuthority: a role decides only proposals in slots it may
// propose in.
func TestCommitAuthority(t *testing.T) {
	f := newFixture(t)
	f.groundedBelief(tr)
	var ids []string
	for _, e := range []kernel.Entry{
		{TraceID: tr, Slot: blackboard.Beliefs, Kind: "refund_due", Payload: belief(true, "charge")},
		{TraceID: tr, Slot: blackboard.Actions, Kind: "issue_refund", Payload: action("refund_due")},
		{TraceID: tr, Slot: blackboard.Plans, Kind: "action_plan", Payload: plan(step("issue_refund", "refund_due"))},
	} {
		p, err := f.planner.Write(f.ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p)
	}
	f.mark()
	for _, id := range ids {
		_, err := f.sim.Commit(f.ctx, tr, id)
		wantErr(t, err, blackboard.ErrPermission, reason.PermissionDenied)
	}
	f.unchanged()

	// Predictions are shared: the planner may decide the simulator's.
	p, err := f.sim.Write(f.ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Predictions, Kind: "outcome", Payload: prediction("issue_refund", 1, "refund_due")})
	if err != nil {
		t.Fatal(err)
	}
	d, err := f.planner.Commit(context.Background(), tr, p)
	if err != nil || d.Code != reason.Committed {
		t.Fatalf("planner deciding a simulator prediction: %s %v", d.Code, err)
	}
	f.checkDecision(d)
}
