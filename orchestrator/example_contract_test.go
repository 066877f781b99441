package orchestrator_test

import (
	"fmt"

	"github.com/blackboardkernel/bk/orchestrator"
)

// A finding must meet its contract before the next worker sees it.
func ExampleFindingContract_Check() {
	contract := orchestrator.FindingContract{Require: []string{"endpoint"}, MinConfidence: 0.7, Evidence: true}
	inTrace := func(id string) bool { return id == "percepts:t:1" }
	findings := []orchestrator.Finding{
		{Assertions: []orchestrator.Assertion{{Kind: "endpoint", Value: "/v2/patients", Evidence: []string{"percepts:t:1"}, Confidence: 0.9}}},
		{Assertions: []orchestrator.Assertion{{Kind: "endpoint", Value: "/v2/patients", Evidence: []string{"percepts:t:7"}, Confidence: 0.9}}},
		{Assertions: []orchestrator.Assertion{{Kind: "endpoint", Value: "/v2/patients", Evidence: []string{"percepts:t:1"}, Confidence: 0.5}}},
	}
	for _, f := range findings {
		fmt.Println(contract.Check(f, inTrace))
	}
	// Output:
	// <nil>
	// orchestrator: finding refused (FINDING_UNRESOLVED_EVIDENCE), assertion "endpoint": evidence "percepts:t:7" is not a record of the trace
	// orchestrator: finding refused (FINDING_LOW_CONFIDENCE), assertion "endpoint": confidence 0.5 below the contract's 0.7
}
