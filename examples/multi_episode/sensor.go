package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math/big"
	"strconv"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/orchestrator"
)

// reading is one sensor observation (docs/reproduction.md §6).
type reading struct {
	Value      float64
	Stale      bool
	Conflict   bool
	Confidence float64
}

// readingFor derives the reading of an episode from the seed: h =
// SHA-256("<seed>:<episode>") read as a 256-bit big-endian integer;
// value = 80 + h mod 30, stale = (h>>8) mod 10 < 3, conflict = (h>>16) mod
// 10 < 2, confidence = 0.40 + ((h>>24) mod 60)/100.
func readingFor(seed int64, episode int) reading {
	sum := sha256.Sum256([]byte(strconv.FormatInt(seed, 10) + ":" + strconv.Itoa(episode)))
	h := new(big.Int).SetBytes(sum[:])
	field := func(shift uint, mod int64) int64 {
		x := new(big.Int).Rsh(h, shift)
		return x.Mod(x, big.NewInt(mod)).Int64()
	}
	return reading{
		Value:    float64(80 + field(0, 30)),
		Stale:    field(8, 10) < 3,
		Conflict: field(16, 10) < 2,
		// (40 + k) / 100 is the double nearest to 0.40 + k/100 rounded to
		// two decimals.
		Confidence: float64(40+field(24, 60)) / 100,
	}
}

// sensor is the tool worker: it commits the episode's temperature reading
// once per trace.
type sensor struct {
	tool kernel.Handle
	// read returns the reading for a trace, false for a trace it does not
	// know.
	read func(traceID string) (reading, bool)
}

func (s *sensor) ID() string                { return "sensor" }
func (s *sensor) Handle() kernel.Handle     { return s.tool }
func (s *sensor) Reads() []blackboard.Slot  { return nil }
func (s *sensor) Writes() []blackboard.Slot { return []blackboard.Slot{blackboard.Percepts} }
func (s *sensor) ShouldActivate(v kernel.View) bool {
	return !v.Has(blackboard.Percepts, kindTemperature)
}

func (s *sensor) Step(ctx context.Context, sc *orchestrator.StepContext) (bool, error) {
	traceID := sc.TraceID()
	r, ok := s.read(traceID)
	if !ok {
		return false, fmt.Errorf("sensor: no reading for trace %q", traceID)
	}
	_, err := s.tool.Write(ctx, kernel.Entry{
		TraceID: traceID,
		Slot:    blackboard.Percepts,
		Kind:    kindTemperature,
		Payload: blackboard.Payload{
			"value":    r.Value,
			"unit":     "C",
			"stale":    r.Stale,
			"conflict": r.Conflict,
		},
		Confidence: new(r.Confidence),
	})
	return err == nil, err
}
