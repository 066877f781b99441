package orchestrator

import (
	"context"
	"fmt"
	"sync"

	"github.com/google/uuid"
)

// Series groups the episodes an agent runs with one orchestrator. Each
// episode is one trace; the series issues its id (a random UUID, so ids
// stay unique across series and process restarts sharing a store) and
// remembers its index. Records of persistent scope, such as learned
// constraints, are what carries over from one episode to the next.
//
// A Series is safe for concurrent use.
type Series struct {
	o    *Orchestrator
	id   string
	opts []RunOption

	mu     sync.Mutex
	traces []string
	index  map[string]int
}

// NewSeries returns a series running episodes on o with opts applied to
// every run (on top of o's own options). A nil o or a bad option is
// [ErrInvalidOption].
func NewSeries(o *Orchestrator, opts ...RunOption) (*Series, error) {
	if o == nil {
		return nil, fmt.Errorf("%w: nil orchestrator", ErrInvalidOption)
	}
	if _, err := o.cfg.with(opts); err != nil {
		return nil, err
	}
	return &Series{
		o:     o,
		id:    uuid.NewString(),
		opts:  append([]RunOption(nil), opts...),
		index: make(map[string]int),
	}, nil
}

// ID returns the series' id, a random UUID.
func (s *Series) ID() string { return s.id }

// NewTrace issues the trace id of the next episode and returns it with the
// episode's index (0 for the first).
func (s *Series) NewTrace() (episode int, traceID string) {
	traceID = uuid.NewString()
	s.mu.Lock()
	defer s.mu.Unlock()
	episode = len(s.traces)
	s.traces = append(s.traces, traceID)
	s.index[traceID] = episode
	return episode, traceID
}

// Episode returns the index of the episode whose trace id this series
// issued, and false for any other id.
func (s *Series) Episode(traceID string) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.index[traceID]
	return i, ok
}

// Traces returns the trace ids issued so far, in episode order.
func (s *Series) Traces() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.traces...)
}

// RunEpisode issues a new trace id and runs the orchestrator on it with the
// series' options and then opts. It returns what [Orchestrator.Run]
// returns; Result.TraceID is the new id.
func (s *Series) RunEpisode(ctx context.Context, opts ...RunOption) (Summary, error) {
	_, traceID := s.NewTrace()
	all := append(append(make([]RunOption, 0, len(s.opts)+len(opts)), s.opts...), opts...)
	return s.o.Run(ctx, traceID, all...)
}
