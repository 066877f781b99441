package orchestrator_test

import (
	"fmt"
	"testing"

	"github.com/blackboardkernel/bk/orchestrator"
)

// TestContractRefusalText: a finding must meet its contract before the
// next worker sees it; a refusal names its code, the assertion and why.
func TestContractRefusalText(t *testing.T) {
	contract := orchestrator.FindingContract{Require: []string{"endpoint"}, MinConfidence: 0.7, Evidence: true}
	inTrace := func(id string) bool { return id == "percepts:t:1" }
	findings := []orchestrator.Finding{
		{Assertions: []orchestrator.Assertion{{Kind: "endpoint", Value: "/v2/patients", Evidence: []string{"percepts:t:1"}, Confidence: 0.9}}},
		{Assertions: []orchestrator.Assertion{{Kind: "endpoint", Value: "/v2/patients", Evidence: []string{"percepts:t:7"}, Confidence: 0.9}}},
		{Assertions: []orchestrator.Assertion{{Kind: "endpoint", Value: "/v2/patients", Evidence: []string{"percepts:t:1"}, Confidence: 0.5}}},
	}
	want := []string{
		"<nil>",
		`orchestrator: finding refused (FINDING_UNRESOLVED_EVIDENCE), assertion "endpoint": evidence "percepts:t:7" is not a record of the trace`,
		`orchestrator: finding refused (FINDING_LOW_CONFIDENCE), assertion "endpoint": confidence 0.5 below the contract's 0.7`,
	}
	for i, f := range findings {
		err := contract.Check(f, inTrace)
		var text string
		if e, ok := err.(*orchestrator.Error); ok {
			text = e.Err.Error()
		} else {
			text = fmt.Sprint(err)
		}
		if text != want[i] {
			t.Errorf("finding %d: %s, want %s", i, text, want[i])
		}
	}
}
