package budget

// DrawsOn reports whether what r spends counts on other: r is other, or a
// sub-run of it at any depth ([Run.Sub]). A caller that holds several runs
// for one step (a gate's budget and a call's own) charges only the runs
// no other of them draws on, so that the step counts once on each. It is
// safe for concurrent use; a nil run draws on nothing.
func (r *Run) DrawsOn(other *Run) bool {
	if other == nil {
		return false
	}
	for x := r; x != nil; x = x.parent {
		if x == other {
			return true
		}
	}
	return false
}
