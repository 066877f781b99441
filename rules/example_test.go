package rules_test

import (
	"context"
	"fmt"
	"log"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/rules"
)

// A refund larger than the charge passes every built-in check (it rests on
// a true belief about a fresh percept); a rule refuses it.
func Example() {
	ctx := context.Background()
	rs, err := rules.New(
		rules.OnAction("refund_within_charge", "issue_refund", `action.amount <= percepts.charge.amount`),
	)
	if err != nil {
		log.Fatal(err)
	}
	k, err := kernel.New(kernel.Config{Validators: []kernel.Validator{rs}})
	if err != nil {
		log.Fatal(err)
	}
	defer k.Close()

	_, err = k.Handle(blackboard.RoleTool, "payments").Write(ctx, kernel.Entry{TraceID: "ep-1", Slot: blackboard.Percepts, Kind: "charge",
		Payload: blackboard.Payload{"amount": 89.00}})
	if err != nil {
		log.Fatal(err)
	}
	planner := k.Proposer(blackboard.RolePlanner, "planner")
	d, err := planner.Submit(ctx, kernel.Entry{TraceID: "ep-1", Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"charge"}}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(d.Code)
	d, err = planner.Submit(ctx, kernel.Entry{TraceID: "ep-1", Slot: blackboard.Actions, Kind: "issue_refund",
		Payload: blackboard.Payload{"amount": 890.00, "requires_beliefs": []string{"refund_due"}}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(d.Code, "by", d.Rule+":", d.Detail)
	// Output:
	// COMMITTED
	// RULE_VIOLATED by refund_within_charge: action issue_refund: rule is false: action.amount <= percepts.charge.amount; it read action.amount = 890, percepts.charge.amount = 89
}
