package orchestrator_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/orchestrator"
)

// BenchmarkRun measures a whole orchestrated episode: ordering, a view per
// activation test, a sensor and an analyst, and the quiet round that ends it.
func BenchmarkRun(b *testing.B) {
	k := newKernel(b)
	sensor, analyst := sensorAndAnalyst(k)
	o := newOrch(b)
	if err := o.Register(sensor, analyst); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		res, err := o.Run(ctx, "run-"+strconv.Itoa(i))
		if err != nil || res.End != orchestrator.EndQuiescent || len(res.Errors) > 0 || !res.View.Has(blackboard.Beliefs, "hot") {
			b.Fatalf("run: %v, quiescent %v, errors %v", err, res.End, res.Errors)
		}
	}
}
