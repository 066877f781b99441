package study

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/blackboardkernel/bk/bench/perturb"
	"github.com/blackboardkernel/bk/blackboard"
)

// The six tasks of docs/reproduction.md §2, in the paper's order.
func TestBuiltinTasks(t *testing.T) {
	tasks, err := BuiltinTasks()
	if err != nil {
		t.Fatal(err)
	}
	want := []Inputs{
		{"ch_3P0x1A2B3C", "cus_9Xk2mN", "Marko", 149.99, "product_not_received", false},
		{"ch_7Q1y2B4D5E", "cus_4Rm8pK", "Elena", 89.00, "fraudulent", false},
		{"ch_5R2z3C6F7G", "cus_2Tn6qJ", "James", 249.50, "duplicate", false},
		{"ch_8S3a4D7H8I", "cus_6Wp3sM", "Alicia", 59.99, "product_unacceptable", true},
		{"ch_2T4b5E8J9K", "cus_1Uq7rL", "David", 320.00, "general", false},
		{"ch_6U5c6F9L0M", "cus_8Xr4tN", "Sofia", 199.00, "product_not_received", false},
	}
	ids := []string{"clean", "stale", "conflict", "duplicate", "tool_failure", "combined"}
	if len(tasks) != len(want) {
		t.Fatalf("%d tasks, want %d", len(tasks), len(want))
	}
	for i, task := range tasks {
		if task.ID != "stripe_refund_"+ids[i] || task.Inputs != want[i] {
			t.Errorf("task %d = %s %+v, want stripe_refund_%s %+v", i, task.ID, task.Inputs, ids[i], want[i])
		}
		if len(task.Constraints) != 1 || task.Constraints[0] != (Constraint{"no_duplicate_refund", true, "is_duplicate"}) {
			t.Errorf("%s constraints = %+v", task.ID, task.Constraints)
		}
	}
	if k := tasks[0].Key(); k != "charge:ch_3P0x1A2B3C:cus_9Xk2mN" {
		t.Errorf("Key = %q", k)
	}
}

func TestCharge(t *testing.T) {
	task := builtinTask(t, "stripe_refund_clean")
	c := task.Charge(perturb.Flags{Stale: true, LowConfidence: true}, false)
	want := blackboard.Payload{"charge_id": "ch_3P0x1A2B3C", "amount": 149.99, "currency": "usd", "status": "disputed",
		"customer_id": "cus_9Xk2mN", "stale": true, "conflict": false, "low_confidence": true}
	if jsonText(c) != jsonText(want) {
		t.Errorf("charge = %s\nwant     %s", jsonText(c), jsonText(want))
	}
	r := task.Refund()
	if jsonText(r) != `{"amount":149.99,"charge_id":"ch_3P0x1A2B3C","currency":"usd","is_duplicate":false,"reason":"product_not_received"}` {
		t.Errorf("refund = %s", jsonText(r))
	}
}

func TestLoadTasksRefusesBadFiles(t *testing.T) {
	good := `{"id":"t1","inputs":{"charge_id":"ch","customer_id":"cus","amount":1},"constraints":[{"name":"c","enabled":true,"blocks_field":"f"}]}`
	for _, c := range []struct {
		name  string
		files map[string]string
		text  string
	}{
		{"no files", map[string]string{"readme.txt": "x"}, "no *.json"},
		{"not JSON", map[string]string{"a.json": "{"}, "a.json"},
		{"unknown field", map[string]string{"a.json": `{"id":"t","inputs":{"charge_id":"c","customer_id":"u","amount":1},"colour":1}`}, "colour"},
		{"two values", map[string]string{"a.json": good + good}, "more than one"},
		{"bad id", map[string]string{"a.json": `{"id":"a b","inputs":{"charge_id":"c","customer_id":"u","amount":1}}`}, "id"},
		{"no charge", map[string]string{"a.json": `{"id":"t","inputs":{"customer_id":"u","amount":1}}`}, "charge_id"},
		{"no customer", map[string]string{"a.json": `{"id":"t","inputs":{"charge_id":"c","amount":1}}`}, "customer_id"},
		{"zero amount", map[string]string{"a.json": `{"id":"t","inputs":{"charge_id":"c","customer_id":"u","amount":0}}`}, "amount"},
		{"constraint without field", map[string]string{"a.json": `{"id":"t","inputs":{"charge_id":"c","customer_id":"u","amount":1},"constraints":[{"name":"c"}]}`}, "blocks_field"},
		{"constraint twice", map[string]string{"a.json": `{"id":"t","inputs":{"charge_id":"c","customer_id":"u","amount":1},"constraints":[{"name":"c","blocks_field":"f"},{"name":"c","blocks_field":"g"}]}`}, "twice"},
		{"id twice", map[string]string{"a.json": good, "b.json": good}, "used twice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for name, body := range c.files {
				fsys[name] = &fstest.MapFile{Data: []byte(body)}
			}
			_, err := LoadTasks(fsys)
			if !errors.Is(err, ErrInvalidTask) || !strings.Contains(err.Error(), c.text) {
				t.Fatalf("LoadTasks = %v, want ErrInvalidTask mentioning %q", err, c.text)
			}
		})
	}
	tasks, err := LoadTasks(fstest.MapFS{"b.json": {Data: []byte(good)}, "a.json": {Data: []byte(strings.Replace(good, "t1", "t0", 1))}})
	if err != nil || len(tasks) != 2 || tasks[0].ID != "t0" {
		t.Fatalf("LoadTasks = %+v, %v; want t0, t1 in file order", tasks, err)
	}
}
