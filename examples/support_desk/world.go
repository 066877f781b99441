package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"sync"
)

// The world is what the desk acts on, simulated: the shop's order system,
// its payment API, its mail outbox and the ticket queue. None of it is
// governance; the kernel and the gate only ever see it through the tools'
// effects.
//
// With --db the world keeps a journal next to the database (FILE.world):
// one JSON line per payment, email and finished conversation, appended and
// synced before the call that caused it returns, so that a restarted
// process sees the money that moved before the crash.

// order is a record of the order system.
type order struct {
	ID       string  `json:"order_id"`
	Customer string  `json:"customer"`
	Email    string  `json:"customer_email"`
	Item     string  `json:"item"`
	Amount   float64 `json:"amount"`
	// Refundable: the order is inside the return window.
	Refundable bool `json:"refundable"`
	// Carrier is the carrier's last word on the parcel.
	Carrier string `json:"carrier_status"`
	// Warehouse is what the warehouse found, when the item came back.
	Warehouse string `json:"warehouse_note,omitempty"`
}

// orders is the order system's catalogue.
var orders = []order{
	{ID: "A1", Customer: "Ana Lima", Email: "ana@example.com", Item: "rain jacket", Amount: 80,
		Refundable: true, Carrier: "delivered nine days late"},
	{ID: "A2", Customer: "Ben Okafor", Email: "ben@example.com", Item: "ceramic teapot", Amount: 120,
		Refundable: true, Carrier: "delivered", Warehouse: "carrier photo shows a cracked box"},
	{ID: "A3", Customer: "Chloe Martin", Email: "chloe@example.com", Item: "espresso machine", Amount: 750,
		Refundable: true, Carrier: "delivered", Warehouse: "returned parcel holds a grinder, not the machine ordered"},
	{ID: "A4", Customer: "Dev Patel", Email: "dev@example.com", Item: "road bike", Amount: 900,
		Refundable: true, Carrier: "delivered and signed for by D. Patel"},
	{ID: "A9", Customer: "Eve Novak", Email: "eve@example.com", Item: "headphones", Amount: 60,
		Refundable: true, Carrier: "delivered"},
}

// staleReads says which reads of an order the order system serves from
// its lagging replica (1 is the first read in this process): the second
// read of A2 comes back with stale: true.
var staleReads = map[string][]int{"A2": {2}}

// payment is a refund the payment API made: money that moved.
type payment struct {
	ID      string  `json:"payment_id"`
	Key     string  `json:"key"` // the caller's idempotency key
	OrderID string  `json:"order_id"`
	Amount  float64 `json:"amount"`
}

// email is a message the outbox sent.
type email struct {
	ID      string `json:"message_id"`
	Key     string `json:"key"`
	To      string `json:"to"`
	Subject string `json:"subject"`
}

// event is one line of the journal.
type event struct {
	Type    string   `json:"type"` // payment, email, turn
	Payment *payment `json:"payment,omitempty"`
	Email   *email   `json:"email,omitempty"`
	Turn    string   `json:"turn,omitempty"` // "T2/1": ticket T2's first message was handled
}

// errUnavailable is the payment API's transient failure.
var errUnavailable = errors.New("payment API: 503 service unavailable, try again")

// world is the simulated order system, payment API, outbox and ticket
// queue. It is safe for concurrent use.
type world struct {
	seed     int64
	failRate float64 // share of payment requests that fail with a 503

	path     string // the journal's; "" in memory
	good     int64  // the length of the journal's complete lines
	mu       sync.Mutex
	journal  *os.File // nil: in memory
	reads    map[string]int
	payments []payment
	byKey    map[string]int   // idempotency key -> index in payments
	requests map[string]int   // payment requests seen per key, in this process
	emails   map[string]email // by idempotency key
	turns    map[string]bool  // conversations handled
	stats    struct{ failures, replays int }
}

// openWorld returns the world, kept in memory (path "") or in the journal
// at path, which it replays. It writes nothing and creates no file:
// [world.open] does, once the program's other input was checked too.
func openWorld(path string, seed int64, failRate float64) (*world, error) {
	w := &world{seed: seed, failRate: failRate, reads: map[string]int{}, byKey: map[string]int{},
		requests: map[string]int{}, emails: map[string]email{}, turns: map[string]bool{}, path: path}
	if path == "" {
		return w, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return w, nil // a new world: open creates its journal
	}
	if err != nil {
		return nil, fmt.Errorf("world journal %s: %w", path, err)
	}
	defer f.Close()
	if w.good, err = w.replay(f); err != nil {
		return nil, fmt.Errorf("world journal %s: %w", path, err)
	}
	return w, nil
}

// open opens the journal for appending, creating it for a new world, and
// cuts off a torn last line (a crash mid-write) that openWorld skipped.
func (w *world) open() error {
	if w.path == "" {
		return nil
	}
	f, err := os.OpenFile(w.path, os.O_RDWR|os.O_CREATE, 0o644)
	if err == nil {
		err = f.Truncate(w.good)
		if err == nil {
			_, err = f.Seek(0, io.SeekEnd)
		}
		if err != nil {
			f.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("world journal %s: %w", w.path, err)
	}
	w.journal = f
	return nil
}

// replay applies the journal's events and returns the length of its
// complete lines.
func (w *world) replay(r io.Reader) (int64, error) {
	br := bufio.NewReader(r)
	var good int64
	for {
		line, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return good, nil // a line without its newline was torn by a crash
		}
		if err != nil {
			return good, err
		}
		var ev event
		if err := json.Unmarshal(bytes.TrimSpace(line), &ev); err != nil {
			return good, fmt.Errorf("line after byte %d: %w", good, err)
		}
		w.apply(ev)
		good += int64(len(line))
	}
}

func (w *world) apply(ev event) {
	switch {
	case ev.Payment != nil:
		w.byKey[ev.Payment.Key] = len(w.payments)
		w.payments = append(w.payments, *ev.Payment)
	case ev.Email != nil:
		w.emails[ev.Email.Key] = *ev.Email
	case ev.Turn != "":
		w.turns[ev.Turn] = true
	}
}

// record applies ev and, with a journal, appends it and syncs the file
// before returning. Called with w.mu held.
func (w *world) record(ev event) error {
	if w.journal != nil {
		b, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		if _, err := w.journal.Write(append(b, '\n')); err != nil {
			return err
		}
		if err := w.journal.Sync(); err != nil {
			return err
		}
	}
	w.apply(ev)
	return nil
}

// Close closes the journal.
func (w *world) Close() error {
	if w.journal == nil {
		return nil
	}
	return w.journal.Close()
}

func findOrder(id string) (order, bool) {
	i := slices.IndexFunc(orders, func(o order) bool { return o.ID == id })
	if i < 0 {
		return order{}, false
	}
	return orders[i], true
}

// refunded is what the payment API has refunded on an order. Called with
// w.mu held.
func (w *world) refunded(orderID string) float64 {
	total := 0.0
	for _, p := range w.payments {
		if p.OrderID == orderID {
			total += p.Amount
		}
	}
	return total
}

// Lookup reads an order from the order system. A read the replica serves
// is marked stale.
func (w *world) Lookup(id string) (map[string]any, error) {
	o, ok := findOrder(id)
	if !ok {
		return nil, fmt.Errorf("order system: no order %q", id)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reads[id]++
	stale := slices.Contains(staleReads[id], w.reads[id])
	return map[string]any{
		"order_id": o.ID, "customer": o.Customer, "customer_email": o.Email, "item": o.Item,
		"amount": o.Amount, "refunded": w.refunded(id), "refundable": o.Refundable,
		"carrier_status": o.Carrier, "warehouse_note": o.Warehouse, "stale": stale,
	}, nil
}

// Refund asks the payment API to refund amount on an order, under an
// idempotency key. A key it has seen before returns the first payment and
// moves no money (replayed). Otherwise the request may fail with
// errUnavailable (drawn from the seed, the key and how many requests for
// the key this process made), and an amount beyond what is left to
// refund is refused for good.
func (w *world) Refund(key, orderID string, amount float64) (p payment, replayed bool, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if i, ok := w.byKey[key]; ok {
		w.stats.replays++
		return w.payments[i], true, nil
	}
	w.requests[key]++
	if w.draw("pay", key, w.requests[key]) < w.failRate {
		w.stats.failures++
		return payment{}, false, errUnavailable
	}
	o, ok := findOrder(orderID)
	switch {
	case !ok:
		return payment{}, false, fmt.Errorf("payment API: 404 no charge for order %q", orderID)
	case amount <= 0 || amount > o.Amount-w.refunded(orderID):
		return payment{}, false, fmt.Errorf("payment API: 400 refund of %.2f exceeds what is left on order %s", amount, orderID)
	}
	p = payment{ID: fmt.Sprintf("pay_%d", len(w.payments)+1), Key: key, OrderID: orderID, Amount: amount}
	return p, false, w.record(event{Type: "payment", Payment: &p})
}

// Send sends an email under an idempotency key; a key seen before sends
// nothing and returns the first message.
func (w *world) Send(key, to, subject string) (email, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if m, ok := w.emails[key]; ok {
		return m, nil
	}
	m := email{ID: fmt.Sprintf("msg_%d", len(w.emails)+1), Key: key, To: to, Subject: subject}
	return m, w.record(event{Type: "email", Email: &m})
}

// TurnDone reports whether a conversation was handled to its end.
func (w *world) TurnDone(turn string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.turns[turn]
}

// FinishTurn records that a conversation was handled to its end.
func (w *world) FinishTurn(turn string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.record(event{Type: "turn", Turn: turn})
}

// Payments returns the payment ledger.
func (w *world) Payments() []payment {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.payments)
}

// Emails returns how many emails were sent.
func (w *world) Emails() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.emails)
}

// draw is a number in [0, 1) fixed by the seed and its arguments, the same
// in every process.
func (w *world) draw(what, key string, n int) float64 {
	sum := sha256.Sum256(fmt.Appendf(nil, "%d/%s/%s/%d", w.seed, what, key, n))
	return float64(binary.BigEndian.Uint64(sum[:8])>>11) / (1 << 53)
}
