package pack

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/blackboardkernel/bk/budget"
	"github.com/blackboardkernel/bk/canon"
	"github.com/blackboardkernel/bk/kernel"
)

// Shares is the part of the window each section is given, by section name
// (sectionNames). Every section has one; none is negative; they sum
// to 1.
type Shares map[string]float64

// DefaultShares is the patterns' priority stack: 30 % for the top zone
// (signals, mission, constraints, policy), 35 % for the middle (progress,
// evidence, memory), 25 % for the bottom (task, last result, tools) and
// 10 % for the run controls. It returns a new map on every call.
func DefaultShares() Shares {
	return Shares{
		sectionSignals: 0.05, sectionMission: 0.10, sectionConstraints: 0.10, sectionPolicy: 0.05,
		sectionProgress: 0.12, sectionEvidence: 0.18, sectionMemory: 0.05,
		sectionTask: 0.08, sectionLastResult: 0.07, sectionTools: 0.10,
		sectionControls: 0.10,
	}
}

// DefaultWindow is the usable window, in tokens, when [WithWindow] is not
// given.
const defaultWindow = 16384

// compressAt is the fraction of the window (90 %) above which an
// assembled context is compressed or evicted from before it is used.
const compressAt = 0.9

// Option configures [New].
type Option func(*config)

type config struct {
	encoding string
	window   int
	shares   Shares
	now      func() time.Time
}

// WithEncoding names the encoding tokens are counted in: [EncodingCL100K]
// (the default) or [EncodingO200K].
func WithEncoding(name string) Option { return func(c *config) { c.encoding = name } }

// WithWindow sets the usable window in tokens (default 16384):
// the model's context length less what its answer needs.
func WithWindow(tokens int) Option { return func(c *config) { c.window = tokens } }

// WithShares sets the sections' shares of the window (default
// [DefaultShares]).
func WithShares(s Shares) Option { return func(c *config) { c.shares = s } }

// WithClock sets the clock ages and freshness are read from (default
// time.Now). Tests pass a fixed one.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// Compiler compiles contexts. It is safe for concurrent use: it holds its
// options and a bounded cache of token counts, nothing of any run.
type Compiler struct {
	encoding string
	window   int
	shares   Shares
	now      func() time.Time
	tok      *counter
}

// New returns a compiler. It fails with [ErrEncoding] for an encoding it
// does not know, [ErrWindow] for a window under 1 token, and [ErrInvalid]
// for shares that miss a section, name an unknown one, are negative or do
// not sum to 1, or a nil clock.
func New(opts ...Option) (*Compiler, error) {
	cfg := config{encoding: EncodingCL100K, window: defaultWindow, now: time.Now}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.window < 1 {
		return nil, newErr("new", "", ErrWindow, "window of %d tokens", cfg.window)
	}
	if cfg.now == nil {
		return nil, newErr("new", "", ErrInvalid, "nil clock")
	}
	shares := DefaultShares()
	if cfg.shares != nil {
		if err := checkShares(cfg.shares); err != nil {
			return nil, err
		}
		shares = make(Shares, len(cfg.shares))
		for k, v := range cfg.shares {
			shares[k] = v
		}
	}
	tok, err := newCounter(cfg.encoding)
	if err != nil {
		return nil, err
	}
	return &Compiler{encoding: cfg.encoding, window: cfg.window, shares: shares, now: cfg.now, tok: tok}, nil
}

func checkShares(s Shares) error {
	sum := 0.0
	for _, name := range sectionNames() {
		v, ok := s[name]
		if !ok {
			return newErr("new", name, ErrInvalid, "no share")
		}
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return newErr("new", name, ErrInvalid, "share %v", v)
		}
		sum += v
	}
	if len(s) != len(sectionNames()) {
		return newErr("new", "", ErrInvalid, "shares name a section that does not exist")
	}
	if math.Abs(sum-1) > 1e-9 {
		return newErr("new", "", ErrInvalid, "shares sum to %v, not 1", sum)
	}
	return nil
}

// Count returns the number of tokens of s in the compiler's encoding.
func (c *Compiler) Count(s string) (int, error) { return c.tok.count(s) }

// Compile compiles the context of one turn: the sections of in and the
// trace's evidence and the namespace's memory read through rd, allocated
// the window by shares and cut by priority, with the manifests. It reads
// the trace's view, then by id each belief it shows and the percepts the
// belief rests on, and the persistent records; never the whole trace.
//
// It fails with [ErrInvalid] for input it cannot compile (no trace, no
// mission, an unknown mode, a blank constraint or signal, a progress note
// of more than one line), with [ErrWindow] when the mission and
// constraints do not fit the window or what may not be evicted takes more
// than 90 % of it, and with the reader's errors.
func (c *Compiler) Compile(ctx context.Context, rd kernel.Reader, run Run, in Input) (*Pack, error) {
	if err := checkInput(run, in); err != nil {
		return nil, err
	}
	now := c.now()
	secs, err := c.sections(ctx, rd, run, in, now)
	if err != nil {
		return nil, err
	}
	if err := c.allocate(secs); err != nil {
		return nil, err
	}
	if err := c.relieve(secs); err != nil {
		return nil, err
	}
	return c.assemble(run, in, secs)
}

func checkInput(run Run, in Input) error {
	switch {
	case run.TraceID == "":
		return newErr("compile", "", ErrInvalid, "no trace")
	case strings.TrimSpace(in.Mission) == "":
		return newErr("compile", sectionMission, ErrInvalid, "no mission")
	}
	for name, list := range map[string][]string{sectionConstraints: in.Constraints, sectionSignals: in.Signals} {
		for i, s := range list {
			if strings.TrimSpace(s) == "" {
				return newErr("compile", name, ErrInvalid, "entry %d is blank", i)
			}
		}
	}
	for _, s := range in.Progress {
		if strings.ContainsAny(s.Note, "\r\n") {
			return newErr("compile", sectionProgress, ErrInvalid, "turn %d: a note is one line, not a transcript", s.Turn)
		}
	}
	if section, ok := validText(run, in); !ok {
		return newErr("compile", section, ErrInvalid, "text that is not UTF-8")
	}
	return nil
}

// validText reports whether every text of the run and the input is UTF-8
// (what a model reads and the record stores), and if not, where.
func validText(run Run, in Input) (string, bool) {
	texts := map[string][]string{
		"run":              {run.ID, run.TraceID, run.Session, run.Namespace, run.Role, run.Intent},
		sectionMission:     {in.Mission},
		sectionConstraints: in.Constraints,
		sectionSignals:     in.Signals,
		sectionTask:        {in.Task},
		sectionLastResult:  {in.LastResult},
		sectionPolicy: slices.Concat([]string{in.Policy.Hash}, in.Policy.Rules, in.Policy.Approval,
			in.Policy.Prohibited, in.Policy.MustRefuse, in.Policy.MustEscalate),
	}
	for _, s := range in.Progress {
		texts[sectionProgress] = append(texts[sectionProgress], s.Tool, s.Note)
	}
	for _, t := range in.Tools {
		texts[sectionTools] = append(texts[sectionTools], t.Name, t.Description, string(t.Parameters))
	}
	for _, name := range append(sectionNames(), "run") {
		for _, t := range texts[name] {
			if !utf8.ValidString(t) {
				return name, false
			}
		}
	}
	return "", true
}

// assemble writes the prompt, the sections and the manifests of what the
// allocation kept, and hashes them.
func (c *Compiler) assemble(run Run, in Input, secs []*section) (*Pack, error) {
	p := &Pack{
		Encoding: c.encoding, Window: c.window, Mode: run.mode(), Intent: run.Intent, Role: run.Role,
		Policy: in.Policy.Hash, traceID: run.TraceID,
		sections: make([]sectionUse, 0, len(secs)),
		Manifest: Manifest{Policy: in.Policy, Tools: []string{}, evidence: []evidenceItem{}, memory: []memoryItem{}, cuts: []sectionCut{}},
	}
	p.Manifest.controls = controls(run, in)
	var b strings.Builder
	for _, s := range secs {
		t := s.taken()
		p.sections = append(p.sections, sectionUse{Name: s.name, Share: s.share, Budget: s.budget, Tokens: t})
		p.Tokens += t
		p.Manifest.cuts = append(p.Manifest.cuts, s.cuts...)
		if len(s.kept) == 0 {
			continue
		}
		b.WriteString(s.header)
		for i := range s.kept {
			it := &s.kept[i]
			b.WriteString(it.text)
			if it.tool != "" {
				p.Manifest.Tools = append(p.Manifest.Tools, it.tool)
			}
			p.Manifest.evidence = append(p.Manifest.evidence, it.evidence...)
			if it.memory != nil {
				p.Manifest.memory = append(p.Manifest.memory, *it.memory)
			}
			for _, e := range it.evidence {
				p.refs = append(p.refs, e.ID)
			}
			if it.memory != nil {
				p.refs = append(p.refs, it.memory.ID)
			}
		}
	}
	p.Prompt = b.String()
	var err error
	if p.Hash, err = canon.Digest(p.value()); err != nil {
		return nil, err
	}
	return p, nil
}

// controls are the run controls: the safety mode, what is left of each
// limited budget, and the tools that need an approval.
func controls(run Run, in Input) runControls {
	ctl := runControls{Mode: run.mode(), Approval: in.Policy.Approval}
	if run.Budget != nil {
		snap := run.Budget.Snapshot()
		for _, res := range budget.Resources() {
			if left, ok := snap.Left(res); ok {
				ctl.Budgets = append(ctl.Budgets, resourceLeft{Resource: string(res), Left: left})
			}
		}
	}
	return ctl
}

// fmtAge says how old a record is, in the largest whole unit.
func fmtAge(ms int64) string {
	d := time.Duration(max(ms, 0)) * time.Millisecond
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int64(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int64(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h", int64(d/time.Hour))
	}
	return fmt.Sprintf("%d d", int64(d/(24*time.Hour)))
}

// sortedCopy returns a sorted copy of s.
func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
