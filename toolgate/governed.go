package toolgate

import (
	"context"

	"github.com/blackboardkernel/bk/kernel"
)

// governed writes as one writer through the kernel's [kernel.Governor]:
// the gate's proposals carry their decision records, and its attempts and
// results claim the once-keys the gate derives. The gate never hands it
// out, so no tool's effect, planner or model can do either.
type governed struct {
	gov  *kernel.Governor
	name string
}

func governedAs(k *kernel.Kernel, name string) governed { return governed{k.Governor(), name} }

// Submit submits e as a planner named w.name, with its decision record.
func (w governed) Submit(ctx context.Context, e kernel.Entry) (kernel.Decision, error) {
	return w.gov.Submit(ctx, w.name, e)
}

// Write writes e as a tool named w.name, with its decision record and
// once-keys, and returns the ids of both records it appended.
func (w governed) Write(ctx context.Context, e kernel.Entry) (kernel.Written, error) {
	return w.gov.Write(ctx, w.name, e)
}
