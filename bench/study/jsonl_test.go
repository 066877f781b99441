package study

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/blackboardkernel/bk/bench/perturb"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
)

// encodeJSON is what the run wrote before the hand-written encoder: a
// json.Encoder without HTML escaping.
func encodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return b.Bytes(), err
}

// sameLine fails the test unless appendLine writes exactly what
// encoding/json writes for r, or fails where it fails; it reports whether
// r could be encoded.
func sameLine(t *testing.T, r *Result) bool {
	t.Helper()
	want, wantErr := encodeJSON(r)
	got, err := appendLine(nil, r)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%s %s seed %d: error %v, encoding/json %v", r.Agent, r.TaskID, r.Seed, err, wantErr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s %s seed %d:\n got  %s\n want %s", r.Agent, r.TaskID, r.Seed, got, want)
	}
	return err == nil
}

// Every deterministic agent's episodes, under the default rates and under
// rates that make every fault common, encode to the same bytes as
// encoding/json's.
func TestLinesMatchEncodingJSON(t *testing.T) {
	ctx := context.Background()
	n := 0
	for _, rates := range []perturb.Rates{perturb.DefaultRates(), {Drop: 0.3, Stale: 0.4, Conflict: 0.4, LowConfidence: 0.4}} {
		cfg := DefaultConfig()
		cfg.Seeds = 60
		cfg.Rates = rates
		cfg.Agents = []string{AgentStringGlue, AgentJSONGlue, AgentBK, AgentAdversarialBK}
		cfg.RunID = "run-x"
		p, err := cfg.plan()
		if err != nil {
			t.Fatal(err)
		}
		for j := range p.jobs(&cfg) {
			r, err := play(ctx, j)
			if err != nil {
				t.Fatal(err)
			}
			if !sameLine(t, r) {
				t.Fatalf("%s %s seed %d does not encode", r.Agent, r.TaskID, r.Seed)
			}
			n++
		}
	}
	t.Logf("%d episodes encoded identically", n)
}

// randomString mixes what JSON escapes: quotes, backslashes, control
// characters, invalid UTF-8, U+2028/9, HTML characters and plain text.
func randomString(r *rand.Rand) string {
	pieces := []string{"\"", "\\", "\b", "\f", "\n", "\r", "\t", "\x00", "\x1f", "\x7f", "\xff", "\xc3", "\xe2\x80",
		"\u2028", "\u2029", "<", ">", "&", "é", "日本", "\U0001F600", "\ufffd", "a", "issue_refund", " ", "/"}
	var b strings.Builder
	for range r.IntN(8) {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

func randomFloat(r *rand.Rand) float64 {
	switch r.IntN(6) {
	case 0:
		return math.Float64frombits(r.Uint64()) // any bit pattern, NaN and ±Inf included
	case 1:
		return float64(r.IntN(2000) - 1000)
	case 2:
		return []float64{0, math.Copysign(0, -1), 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, 123456789e13, 0.1, 2.5e-300, math.MaxFloat64, math.SmallestNonzeroFloat64}[r.IntN(12)]
	}
	return (r.Float64() - 0.5) * math.Pow(10, float64(r.IntN(50)-25))
}

func randomValue(r *rand.Rand, depth int) any {
	n := 9
	if depth > 3 {
		n = 5
	}
	switch r.IntN(n) {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return randomString(r)
	case 3:
		return randomFloat(r)
	case 4:
		return r.IntN(100) - 50
	case 5:
		m := map[string]any{}
		for range r.IntN(5) {
			m[randomString(r)] = randomValue(r, depth+1)
		}
		if r.IntN(8) == 0 {
			return map[string]any(nil)
		}
		return m
	case 6:
		l := make([]any, r.IntN(4))
		for i := range l {
			l[i] = randomValue(r, depth+1)
		}
		if r.IntN(8) == 0 {
			return []any(nil)
		}
		return l
	case 7:
		l := make([]string, r.IntN(4))
		for i := range l {
			l[i] = randomString(r)
		}
		return l
	}
	// Types the hand-written encoder hands to encoding/json.
	return []any{int64(-7), uint8(3), float32(0.1), json.Number("12.50"), reason.Code("STALE_EVIDENCE"), struct{ A string }{"<x>"}}[r.IntN(6)]
}

func randomPayload(r *rand.Rand) blackboard.Payload {
	if r.IntN(10) == 0 {
		return nil
	}
	p := blackboard.Payload{}
	for range r.IntN(6) {
		p[randomString(r)] = randomValue(r, 0)
	}
	return p
}

// Random outputs of both kinds, with the strings, numbers and nesting
// payloads can hold, encode to encoding/json's bytes; values JSON cannot
// hold (NaN, infinities) fail with both.
func TestRandomLinesMatchEncodingJSON(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	encoded := 0
	const n = 20000
	for i := range n {
		r := &Result{TaskID: randomString(rnd), Seed: rnd.IntN(1<<40) - 1<<39, Agent: randomString(rnd)}
		r.Metrics = Metrics{randomFloat(rnd), 1, 0, 0.5, randomFloat(rnd)}
		switch i % 3 {
		case 0:
			view := map[blackboard.Slot]map[string]blackboard.Payload{}
			for range rnd.IntN(4) {
				kinds := map[string]blackboard.Payload{}
				for range rnd.IntN(3) {
					kinds[randomString(rnd)] = randomPayload(rnd)
				}
				view[append(blackboard.AllSlots(), "", "bogus")[rnd.IntN(9)]] = kinds // "" and "bogus" are not slots: both encoders must agree on them
			}
			out := &KernelOutput{TraceID: randomString(rnd), View: view, Final: Final{
				BeliefCommitted: rnd.IntN(2) == 0, BeliefCode: reason.Code(randomString(rnd)), PlanCode: "PLAN_FEASIBLE", SafeActionCode: reason.Code(randomString(rnd)),
			}}
			if rnd.IntN(4) == 0 {
				out.View = nil
			}
			if rnd.IntN(2) == 0 {
				a := &Attack{Name: randomString(rnd), Blocked: rnd.IntN(2) == 0}
				if rnd.IntN(4) > 0 {
					a.Attempts = []Attempt{}
					for range rnd.IntN(4) {
						a.Attempts = append(a.Attempts, Attempt{Step: randomString(rnd), Code: reason.Code(randomString(rnd)), Accepted: rnd.IntN(2) == 0})
					}
				}
				out.Attack = a
			}
			r.Output = out
		case 1:
			beliefs := map[string]any{"refund_due": randomValue(rnd, 0)}
			if rnd.IntN(8) == 0 {
				beliefs = nil
			}
			r.Output = &GlueOutput{Beliefs: beliefs, Action: randomPayload(rnd), ToolObs: ToolObs{Charge: randomPayload(rnd), Refund: randomPayload(rnd)}}
		default:
			r.Output = randomValue(rnd, 0)
		}
		if sameLine(t, r) {
			encoded++
		}
	}
	if encoded < n/2 || encoded == n {
		t.Errorf("%d of %d random lines encoded: the cases are lopsided", encoded, n)
	}
	if !utf8.ValidString(string(appendString(nil, "\xff"))) {
		t.Error("invalid UTF-8 copied through")
	}
}

func BenchmarkAppendLine(b *testing.B) {
	ctx := context.Background()
	cfg := DefaultConfig()
	cfg.Seeds = 10
	p, err := cfg.plan()
	if err != nil {
		b.Fatal(err)
	}
	var rs []*Result
	for j := range p.jobs(&cfg) {
		r, err := play(ctx, j)
		if err != nil {
			b.Fatal(err)
		}
		rs = append(rs, r)
	}
	b.Run("hand-written", func(b *testing.B) {
		b.ReportAllocs()
		var line []byte
		for i := 0; b.Loop(); i++ {
			line, _ = appendLine(line[:0], rs[i%len(rs)])
		}
	})
	// The bk agent's lines alone: the 18,000-episode run writes only those.
	var bk []*Result
	for _, r := range rs {
		if r.Agent == AgentBK {
			bk = append(bk, r)
		}
	}
	b.Run("hand-written-bk", func(b *testing.B) {
		b.ReportAllocs()
		var line []byte
		for i := 0; b.Loop(); i++ {
			line, _ = appendLine(line[:0], bk[i%len(bk)])
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		for i := 0; b.Loop(); i++ {
			buf.Reset()
			_ = enc.Encode(rs[i%len(rs)])
		}
	})
}
