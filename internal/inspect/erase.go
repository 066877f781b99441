package inspect

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/cmdline"
	"github.com/blackboardkernel/bk/mask"
)

func eraseFlags(fs *flag.FlagSet, e *env) {
	fs.StringVar(&e.keys, "keys", "", "the key directory of the gate's keyring (mask.OpenKeyDir), kept apart from the store (required)")
	e.check = func() error {
		if e.keys == "" {
			return cmdline.Usagef("--keys DIR is required")
		}
		return nil
	}
}

// erased is what bk erase prints.
type erased struct {
	TraceID   string `json:"trace_id"`
	Namespace string `json:"namespace"`     // the trace's, whose key was erased
	Records   int    `json:"records"`       // the trace's records, unchanged
	Masked    int    `json:"masked_values"` // masked values they hold, which now match nothing
}

// runErase destroys a trace's mask key in the key directory
// (mask.Keys.Erase): the key of the trace in --namespace, or in the
// one namespace that holds the trace id (an id several namespaces hold is
// refused; keys are per namespace), also while an application uses the directory: its
// Keys reads the trace's file on each use, so its next call in the trace
// fails closed. The store is only read: to refuse a trace it does not hold
// (a mistyped id would be erased for good) and to count what the erasure
// covers.
func runErase(ctx context.Context, e *env, args []string) error {
	trace := args[0]
	if _, err := os.Stat(e.keys); err != nil {
		return fmt.Errorf("key directory: %w", err) // never create one here
	}
	ns, err := traceNamespace(ctx, e.store, e.namespace, trace)
	if err != nil {
		return err
	}
	out := erased{TraceID: trace, Namespace: ns}
	for r, err := range e.store.ListTrace(ctx, ns, trace) {
		if err != nil {
			return err
		}
		out.Records++
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		out.Masked += strings.Count(string(b), mask.Prefix)
	}
	if out.Records == 0 {
		return fmt.Errorf("erase: no trace %q: %w", trace, blackboard.ErrNotFound)
	}
	keys, err := mask.OpenKeyDir(ctx, e.keys)
	if err != nil {
		return err
	}
	if err := keys.Erase(ctx, ns, trace); err != nil {
		keys.Close()
		return err
	}
	if err := keys.Close(); err != nil {
		return err
	}
	if e.json {
		return writeJSON(e.out, out)
	}
	_, err = fmt.Fprintln(e.out, Inert(fmt.Sprintf("erased the mask key of trace %s in namespace %s: %d masked values in its %d records match no value now; the records are unchanged",
		trace, ns, out.Masked, out.Records)))
	return err
}
