package console

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/blackboardkernel/bk/budget"
)

// budgetLine is one run's budget as the inbox shows it: the run, and a
// figure per resource it spent or limits.
type budgetLine struct {
	Run      string
	Figures  []string
	Pressure string // the budget pressure, in per cent
	Taken    string // when the snapshot was taken, UTC
}

// budgetLines renders a budget snapshot and its ancestors', the run the
// call was charged to first: "tool_calls 3 of 100" for a limited
// resource, "tokens 1200" for one spent without a limit. A resource
// neither limited nor spent is left out.
func budgetLines(s *budget.Snapshot) []budgetLine {
	var out []budgetLine
	for ; s != nil; s = s.Parent {
		l := budgetLine{Run: s.RunID, Pressure: strconv.Itoa(int(s.Budget*100+0.5)) + "%"}
		if !s.TakenAt.IsZero() {
			l.Taken = s.TakenAt.UTC().Format(time.RFC3339)
		}
		for _, res := range budget.Resources() {
			used, limit := s.Used[res], s.Limits[res]
			_, limited := s.Limits[res]
			if !limited && used == 0 || res == budget.Deadline && !limited {
				continue
			}
			f := string(res) + " " + amount(res, used)
			if limited {
				f += " of " + amount(res, limit)
			}
			if n := s.Refused[res]; n > 0 {
				f += fmt.Sprintf(" (%d refused)", n)
			}
			l.Figures = append(l.Figures, f)
		}
		out = append(out, l)
	}
	return out
}

// amount renders a figure of res: a deadline's milliseconds as a
// duration, a cost with its decimals, a count as a whole number.
func amount(res budget.Resource, v float64) string {
	switch res {
	case budget.Deadline:
		return (time.Duration(v) * time.Millisecond).Round(time.Second).String()
	case budget.Cost:
		return strings.TrimSuffix(strings.TrimRight(strconv.FormatFloat(v, 'f', 4, 64), "0"), ".")
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}
