package storetest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/store/storetest"
)

// TestSessionFlows checks that the flows BenchmarkSession measures are
// what it says they are: every flow of a session executes, the refund is
// once-keyed by its order (a second refund of an order, in another trace,
// is refused), and a session of n flows holds the records of n flows in
// one trace.
func TestSessionFlows(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	d := storetest.NewSession(t, s)
	for _, flow := range storetest.SessionFlows() {
		for n := 1; n <= 3; n++ {
			if err := d.Run(ctx, flow, "t-"+string(flow), n); err != nil {
				t.Fatalf("%s flow %d: %v", flow, n, err)
			}
		}
	}
	err := d.Refund(ctx, "t-other", "t-refund-2")
	if err == nil || !strings.Contains(err.Error(), string(blackboard.CodeDuplicateAction)) {
		t.Errorf("a second refund of order t-refund-2: %v, want it refused as %s", err, blackboard.CodeDuplicateAction)
	}
	readState, err := s.ReadState(ctx, blackboard.DefaultNamespace, "t-readonly")
	if err != nil {
		t.Fatal(err)
	}
	refundState, err := s.ReadState(ctx, blackboard.DefaultNamespace, "t-refund")
	if err != nil {
		t.Fatal(err)
	}
	read, refund := readState.Len, refundState.Len
	if read == 0 || refund <= read {
		t.Errorf("records: %d in three read-only flows, %d in three refund flows; want more for the refunds", read, refund)
	}
}
