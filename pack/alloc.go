package pack

import (
	"slices"
	"strconv"
	"strings"
)

// allocate gives each section its budget and cuts what does not fit.
//
// Each section's budget is its share of the window plus what the sections
// before it left unused (or less what the mission and constraints took
// beyond their shares: they are never cut). A section over its budget is
// cut item by item in its own order (the oldest progress first, the least
// recent evidence and memory first, lists from their end); the task and
// the last result are shortened instead, keeping their beginning. What is
// still unused at the end goes back, in priority order, to the sections
// that were cut; a debt the last sections could not pay is taken back from
// the end of the stack.
func (c *Compiler) allocate(secs []*section) error {
	fixed := 0
	for _, s := range secs {
		if s.fixed {
			fixed += s.need()
		}
	}
	if fixed > c.window {
		return newErr("compile", sectionMission, ErrWindow, "the mission and constraints take %d tokens of a %d-token window", fixed, c.window)
	}
	base := make([]int, len(secs))
	carry := c.window
	for i, s := range secs {
		base[i] = int(s.share * float64(c.window))
		carry -= base[i]
	}
	for i, s := range secs {
		avail := base[i] + carry
		s.budget = max(avail, 0)
		if s.fixed {
			s.kept, s.cuts = s.items, s.pre
			carry = avail - s.taken()
			continue
		}
		if err := c.fit(s, avail); err != nil {
			return err
		}
		carry = avail - s.taken()
	}
	if carry > 0 {
		for _, s := range secs {
			if carry <= 0 {
				break
			}
			if s.fixed || s.taken() == s.need() {
				continue
			}
			had := s.taken()
			if err := c.fit(s, had+carry); err != nil {
				return err
			}
			s.budget += carry
			carry -= s.taken() - had
			s.budget -= carry
		}
	}
	for i := len(secs) - 1; i >= 0 && carry < 0; i-- {
		s := secs[i]
		if s.fixed || s.taken() == 0 {
			continue
		}
		had := s.taken()
		if err := c.fit(s, had+carry); err != nil {
			return err
		}
		s.budget = s.taken()
		carry += had - s.taken()
	}
	return nil
}

// fit keeps what of s fits in avail tokens, and records the cuts.
func (c *Compiler) fit(s *section, avail int) error {
	s.cuts = slices.Clone(s.pre)
	need := s.need()
	if need <= avail {
		s.kept = s.items
		return nil
	}
	if s.text && len(s.items) == 1 {
		return c.shorten(s, avail)
	}
	order := cutOrder(s.items)
	drop := make([]bool, len(s.items))
	left := need
	for _, i := range order {
		if left <= avail {
			break
		}
		drop[i] = true
		left -= s.items[i].tokens
		s.cuts = append(s.cuts, sectionCut{Section: s.name, Item: s.items[i].key, Tokens: s.items[i].tokens, Reason: reasonBudget})
	}
	s.kept = make([]item, 0, len(s.items))
	for i := range s.items {
		if !drop[i] {
			s.kept = append(s.kept, s.items[i])
		}
	}
	return nil
}

// cutOrder lists the indexes of items in the order they are cut: by rank,
// and of equal rank the later first.
func cutOrder(items []item) []int {
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if items[a].rank != items[b].rank {
			return items[a].rank - items[b].rank
		}
		return b - a
	})
	return order
}

// shorten keeps the beginning of a one-text section that fits in avail,
// with a line saying how much was cut; nothing when not even that fits.
func (c *Compiler) shorten(s *section, avail int) error {
	it := s.items[0]
	room := avail - s.headerTokens
	s.kept = nil
	for try := 0; try < 4 && room > 0; try++ {
		head, err := c.tok.head(it.text, room)
		if err != nil {
			return err
		}
		kept, err := c.tok.count(unit(head))
		if err != nil {
			return err
		}
		short := it
		short.text = unit(head) + "[cut: " + strconv.Itoa(it.tokens-kept) + " more tokens]\n"
		if short.tokens, err = c.tok.count(short.text); err != nil {
			return err
		}
		if over := short.tokens - (avail - s.headerTokens); over > 0 {
			room -= over
			continue
		}
		s.kept = []item{short}
		s.cuts = append(s.cuts, sectionCut{Section: s.name, Item: s.name, Tokens: it.tokens - kept, Reason: reasonBudget})
		return nil
	}
	s.cuts = append(s.cuts, sectionCut{Section: s.name, Item: s.name, Tokens: it.tokens, Reason: reasonBudget})
	return nil
}

// The sections evicted from, in this order, above 90 % of the
// window: progress (after compressing it), memory, evidence, the last
// result, then the tools.
var evictOrder = []string{sectionProgress, sectionMemory, sectionEvidence, sectionLastResult, sectionTools}

// relieve brings the context under 90 % of the window: it first
// compresses the progress to one line, then evicts items in
// [evictOrder], each section in its own cut order. It fails with
// [ErrWindow] when what may not be evicted stays above the mark.
func (c *Compiler) relieve(secs []*section) error {
	mark := int(compressAt * float64(c.window))
	sum := 0
	by := make(map[string]*section, len(secs))
	for _, s := range secs {
		sum += s.taken()
		by[s.name] = s
	}
	if sum <= mark {
		return nil
	}
	if p := by[sectionProgress]; len(p.kept) > 1 {
		had := p.taken()
		line := summary(p.kept)
		n, err := c.tok.count(line)
		if err != nil {
			return err
		}
		for _, it := range p.kept {
			p.cuts = append(p.cuts, sectionCut{Section: p.name, Item: it.key, Tokens: it.tokens, Reason: reasonCompressed})
		}
		p.kept = []item{{key: "summary", text: line, tokens: n}}
		sum += p.taken() - had
	}
	for _, name := range evictOrder {
		s := by[name]
		for sum > mark && len(s.kept) > 0 {
			i := cutOrder(s.kept)[0]
			had := s.taken()
			it := s.kept[i]
			s.kept = slices.Delete(slices.Clone(s.kept), i, i+1)
			s.cuts = append(s.cuts, sectionCut{Section: s.name, Item: it.key, Tokens: it.tokens, Reason: reasonEvicted})
			sum -= had - s.taken()
		}
	}
	if sum > mark {
		return newErr("compile", "", ErrWindow, "%d tokens that may not be evicted exceed %d (%.0f %% of the window)", sum, mark, compressAt*100)
	}
	return nil
}

// summary compresses progress items to one line: the turns, how many
// succeeded and failed, and the tools used.
func summary(kept []item) string {
	ok, failed := 0, 0
	var tools []string
	for _, it := range kept {
		if it.step == nil {
			continue
		}
		if it.step.OK {
			ok++
		} else {
			failed++
		}
		if t := it.step.Tool; t != "" && !slices.Contains(tools, t) {
			tools = append(tools, t)
		}
	}
	line := "- " + kept[0].key + " to " + kept[len(kept)-1].key + " (compressed): " +
		strconv.Itoa(ok) + " ok, " + strconv.Itoa(failed) + " failed"
	if len(tools) > 0 {
		line += "; tools used: " + strings.Join(tools, ", ")
	}
	return unit(line)
}
