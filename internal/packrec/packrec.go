package packrec

// Section is one section's share of the window, the budget it was given
// (its share, plus what earlier sections left unused) and the tokens it
// took.
type Section struct {
	Name   string  `json:"name"`
	Share  float64 `json:"share"`
	Budget int     `json:"budget"`
	Tokens int     `json:"tokens"`
}

// Evidence is one record shown in the evidence section: a committed,
// active belief of the trace, or a percept it rests on.
type Evidence struct {
	ID        string   `json:"id"`
	Slot      string   `json:"slot"`
	Kind      string   `json:"kind"`
	Belief    string   `json:"belief,omitempty"` // a percept's: the belief it backs
	AgeMS     int64    `json:"age_ms"`
	TTLMS     int64    `json:"ttl_ms,omitempty"`
	Freshness string   `json:"freshness"`
	Flags     []string `json:"flags,omitempty"`
	Refs      []string `json:"refs,omitempty"` // a belief's evidence refs
}

// Memory is one persistent record recalled into the memory section.
type Memory struct {
	ID    string `json:"id"`
	Slot  string `json:"slot"`
	Kind  string `json:"kind"`
	AgeMS int64  `json:"age_ms"`
}

// Controls are the run controls shown to the model: the safety mode, what
// is left of each limited budget resource, and the tools that need an
// approval.
type Controls struct {
	Mode     string   `json:"mode"`
	Budgets  []Left   `json:"budgets,omitempty"`
	Approval []string `json:"approval,omitempty"`
}

// Left is what is left of one limited budget resource.
type Left struct {
	Resource string  `json:"resource"`
	Left     float64 `json:"left"`
}

// Cut is one thing left out of, or shortened in, a compiled context: its
// section, the item (a record id, a tool, "turn N", or the section for a
// shortened text), the tokens cut and why ("over_budget", "compressed",
// "evicted", "prohibited").
type Cut struct {
	Section string `json:"section"`
	Item    string `json:"item"`
	Tokens  int    `json:"tokens"`
	Reason  string `json:"reason"`
}
