package study

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"path"
	"slices"
	"strings"

	"github.com/blackboardkernel/bk/bench/perturb"
	"github.com/blackboardkernel/bk/blackboard"
)

//go:embed tasks/*.json
var builtin embed.FS

// Task is one benchmark scenario, read from a JSON file (docs/reproduction.md §2).
type Task struct {
	ID          string       `json:"id"`
	Description string       `json:"description"`
	Inputs      Inputs       `json:"inputs"`
	Constraints []Constraint `json:"constraints"`
}

// Inputs are the task's charge and dispute.
type Inputs struct {
	ChargeID      string  `json:"charge_id"`
	CustomerID    string  `json:"customer_id"`
	CustomerName  string  `json:"customer_name"`
	Amount        float64 `json:"amount"`
	DisputeReason string  `json:"dispute_reason"`
	// IsDuplicate is true when a refund was already issued: the task's
	// no_duplicate_refund constraint must block the refund.
	IsDuplicate bool `json:"is_duplicate"`
}

// Constraint is a constraint the task commits before the episode runs.
type Constraint struct {
	Name        string `json:"name"`
	Enabled     bool   `json:"enabled"`
	BlocksField string `json:"blocks_field"`
}

// Key is the perturbation key of the task's charge lookup:
// "charge:<charge_id>:<customer_id>".
func (t *Task) Key() string { return "charge:" + t.Inputs.ChargeID + ":" + t.Inputs.CustomerID }

// Charge renders what the payment tool returns for the task under faults f.
// For a dropped lookup it renders the substitute an agent uses instead: the
// task's own charge with stale set to substituteStale, conflict false and
// no low_confidence key at all.
func (t *Task) Charge(f perturb.Flags, substituteStale bool) blackboard.Payload {
	p := blackboard.Payload{
		"charge_id":   t.Inputs.ChargeID,
		"amount":      t.Inputs.Amount,
		"currency":    "usd",
		"status":      "disputed",
		"customer_id": t.Inputs.CustomerID,
	}
	if f.Drop {
		p["stale"] = substituteStale
		p["conflict"] = false
		return p
	}
	p["stale"] = f.Stale
	p["conflict"] = f.Conflict
	p["low_confidence"] = f.LowConfidence
	return p
}

// Refund renders what the refund tool returns when it executes a refund.
func (t *Task) Refund() blackboard.Payload {
	return blackboard.Payload{
		"charge_id":    t.Inputs.ChargeID,
		"amount":       t.Inputs.Amount,
		"currency":     "usd",
		"reason":       t.Inputs.DisputeReason,
		"is_duplicate": t.Inputs.IsDuplicate,
	}
}

// BuiltinTasks returns the paper's six tasks, embedded in the binary, in
// the paper's order.
func BuiltinTasks() ([]Task, error) {
	sub, err := fs.Sub(builtin, "tasks")
	if err != nil {
		return nil, err
	}
	return LoadTasks(sub)
}

// LoadTasks reads every *.json file at the top of fsys, in file-name order,
// one task per file. A file that is not a valid task, or a task id used
// twice, is an error wrapping [ErrInvalidTask]; so is a directory without
// tasks.
func LoadTasks(fsys fs.FS) ([]Task, error) {
	names, err := fs.Glob(fsys, "*.json")
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%w: no *.json task files", ErrInvalidTask)
	}
	tasks := make([]Task, 0, len(names))
	for _, name := range names {
		raw, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		t, err := parseTask(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path.Base(name), err)
		}
		if slices.ContainsFunc(tasks, func(o Task) bool { return o.ID == t.ID }) {
			return nil, fmt.Errorf("%s: %w: task id %q used twice", name, ErrInvalidTask, t.ID)
		}
		tasks = append(tasks, t)
	}
	return tasks, nil
}

func parseTask(raw []byte) (Task, error) {
	var t Task
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return Task{}, fmt.Errorf("%w: %v", ErrInvalidTask, err)
	}
	if dec.More() {
		return Task{}, fmt.Errorf("%w: more than one JSON value", ErrInvalidTask)
	}
	bad := func(format string, a ...any) (Task, error) {
		return Task{}, fmt.Errorf("%w: "+format, append([]any{ErrInvalidTask}, a...)...)
	}
	switch {
	case !isName(t.ID):
		return bad("id %q must be letters, digits, '_' or '-'", t.ID)
	case t.Inputs.ChargeID == "":
		return bad("task %s: empty inputs.charge_id", t.ID)
	case t.Inputs.CustomerID == "":
		return bad("task %s: empty inputs.customer_id", t.ID)
	case math.IsNaN(t.Inputs.Amount) || t.Inputs.Amount <= 0:
		return bad("task %s: inputs.amount %v must be positive", t.ID, t.Inputs.Amount)
	}
	for i, c := range t.Constraints {
		if !isName(c.Name) || c.BlocksField == "" {
			return bad("task %s: constraint %d needs a name and a blocks_field", t.ID, i)
		}
		if slices.ContainsFunc(t.Constraints[:i], func(o Constraint) bool { return o.Name == c.Name }) {
			return bad("task %s: constraint %q listed twice", t.ID, c.Name)
		}
	}
	return t, nil
}

// isName reports whether s is a non-empty identifier of letters, digits,
// '_' and '-' (task ids go into trace ids and file names).
func isName(s string) bool {
	return s != "" && len(s) <= 128 && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
	}) < 0
}
