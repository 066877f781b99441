package kernelhook

import (
	"context"
	"sync"
)

// Receipts collects the chain links (package chain) of the records the
// kernel appends under one context: a tool call's, so that the gate can
// hand back the receipt of the decision record it wrote without reading
// the store again. Safe for concurrent use.
type Receipts struct {
	mu    sync.Mutex
	kinds []string
	links [][32]byte
	// The first few, in the collector's own allocation: a call appends a
	// handful of records.
	kindBuf [6]string
	linkBuf [6][32]byte
}

type receiptsKey struct{}

// WithReceipts returns ctx carrying a new collector, and the collector.
func WithReceipts(ctx context.Context) (context.Context, *Receipts) {
	r := new(Receipts)
	r.kinds, r.links = r.kindBuf[:0], r.linkBuf[:0]
	return context.WithValue(ctx, receiptsKey{}, r), r
}

// ReceiptsOf returns the collector ctx carries, or nil.
func ReceiptsOf(ctx context.Context) *Receipts {
	r, _ := ctx.Value(receiptsKey{}).(*Receipts)
	return r
}

// Add notes the link of an appended record of kind.
func (r *Receipts) Add(kind string, link [32]byte) {
	r.mu.Lock()
	r.kinds = append(r.kinds, kind)
	r.links = append(r.links, link)
	r.mu.Unlock()
}

// Last returns the link of the last record of kind collected, false when
// there is none.
func (r *Receipts) Last(kind string) ([32]byte, bool) {
	if r == nil {
		return [32]byte{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.kinds) - 1; i >= 0; i-- {
		if r.kinds[i] == kind {
			return r.links[i], true
		}
	}
	return [32]byte{}, false
}
