package kernelhook

import (
	"context"
	"sync"
)

// Receipts collects, under one context (a tool call's), the chain link
// (package chain) of the last record of one kind the kernel appends: the
// gate's decision record, whose link the call hands back as its receipt
// without reading the store again. Safe for concurrent use.
type Receipts struct {
	kind string
	mu   sync.Mutex
	link [32]byte
	ok   bool
}

type receiptsKey struct{}

// WithReceipts returns ctx carrying a new collector for records of kind,
// and the collector.
func WithReceipts(ctx context.Context, kind string) (context.Context, *Receipts) {
	r := &Receipts{kind: kind}
	return context.WithValue(ctx, receiptsKey{}, r), r
}

// ReceiptsOf returns the collector ctx carries, or nil.
func ReceiptsOf(ctx context.Context) *Receipts {
	r, _ := ctx.Value(receiptsKey{}).(*Receipts)
	return r
}

// Add notes the link of an appended record of kind; only the collector's
// kind is kept, the last one appended.
func (r *Receipts) Add(kind string, link [32]byte) {
	if kind != r.kind {
		return
	}
	r.mu.Lock()
	r.link, r.ok = link, true
	r.mu.Unlock()
}

// Last returns the link of the last record of the collector's kind, false
// when there is none (or r is nil).
func (r *Receipts) Last() ([32]byte, bool) {
	if r == nil {
		return [32]byte{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.link, r.ok
}
