package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/failure"
	"github.com/blackboardkernel/bk/toolgate"
)

// world is the scripted system the crew works on: a clinic API whose
// documentation comes in versions, and whose patient endpoints answer as
// the case says. Nothing here touches a network.
type world struct {
	// rateLimited is how many run_job calls answer 429 before one goes
	// through.
	rateLimited int
	// authExpired makes every run_job call answer 401.
	authExpired bool
}

// The documentation's versions, and the endpoint each one describes.
var docs = map[string]string{
	"v1":       "/v1/patients",          // retired: the API answers 405
	"v2":       "/v2/patients",          // lists, but fails on some patients
	"v2-batch": "/v2/patients:batchGet", // the variant that returns every patient
}

// apiError is an answer of the clinic API with an HTTP status: an
// error failure.Classify types by its status.
type apiError struct {
	status int
	msg    string
}

// Error and HTTPStatus make the answer an error failure.Classify types.
func (e apiError) Error() string   { return fmt.Sprintf("clinic API %d: %s", e.status, e.msg) }
func (e apiError) HTTPStatus() int { return e.status }

// Tool schemas.
const (
	docsSchema = `{"type":"object","properties":{"version":{"type":"string","enum":["v1","v2","v2-batch"]}},` +
		`"required":["version"],"additionalProperties":false}`
	compileSchema = `{"type":"object","properties":{"source":{"type":"string"}},"required":["source"],"additionalProperties":false}`
	jobSchema     = `{"type":"object","properties":{"endpoint":{"type":"string"},"dry_run":{"type":"boolean"}},` +
		`"required":["endpoint"],"additionalProperties":false}`
)

// tools are the crew's tools: each role's contract names one.
//
//	read_docs  researcher  the endpoint a version of the docs describes   → percept "docs"
//	compile    coder       checks the job's source                        → percept "build"
//	run_job    executor    fetches the patients from an endpoint          → percept "patients"
//
// run_job's output must hold every patient and no failed one (Expect):
// a partial answer is recorded as a failure, never as the patients.
func (w *world) tools() []toolgate.Tool {
	return []toolgate.Tool{
		{Unscoped: true, Name: "read_docs", Description: "Read a version of the clinic API's documentation.",
			Parameters: json.RawMessage(docsSchema), Result: "docs",
			Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
				v, _ := inv.Args["version"].(string)
				return blackboard.Payload{"version": v, "endpoint": docs[v]}, nil
			}},
		{Unscoped: true, Name: "compile", Description: "Check the job's Python source.",
			Parameters: json.RawMessage(compileSchema), Result: "build",
			Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
				src, _ := inv.Args["source"].(string)
				if strings.Contains(src, "def fetch(endpoint)\n") {
					return nil, failure.New(failure.StatusSyntax, "job.py line 1: expected ':'")
				}
				return blackboard.Payload{"program": "job.py", "lines": float64(strings.Count(src, "\n"))}, nil
			}},
		{Unscoped: true, Name: "run_job", Description: "Run the job against an endpoint of the clinic API.",
			Parameters: json.RawMessage(jobSchema), Result: "patients",
			Expect: &failure.Expect{Data: "patients", NonEmpty: true, PerResource: "results"},
			Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
				return w.runJob(inv.Args)
			}},
	}
}

// runJob answers as the clinic API would.
func (w *world) runJob(args blackboard.Payload) (blackboard.Payload, error) {
	endpoint, _ := args["endpoint"].(string)
	switch {
	case w.authExpired:
		return nil, apiError{401, "token expired"}
	case w.rateLimited > 0:
		w.rateLimited--
		return nil, apiError{429, "too many requests"}
	case endpoint == docs["v1"]:
		return nil, apiError{405, "method not allowed on " + endpoint}
	case endpoint == docs["v2"]:
		// Two patients answer, one fails: the call "succeeds".
		return blackboard.Payload{"status": "ok", "patients": []any{"p1", "p2"},
			"results": map[string]any{"p1": map[string]any{"ok": true}, "p2": map[string]any{"ok": true},
				"p3": map[string]any{"status": 404.0, "error": "not in this shard"}}}, nil
	case endpoint == docs["v2-batch"]:
		return blackboard.Payload{"status": "ok", "patients": []any{"p1", "p2", "p3"},
			"results": map[string]any{"p1": map[string]any{"ok": true}, "p2": map[string]any{"ok": true}, "p3": map[string]any{"ok": true}}}, nil
	}
	return nil, apiError{404, "no endpoint " + endpoint}
}

// roles are the contracts: each worker may call its own tool only.
var roles = map[string][]string{
	"researcher": {"read_docs"},
	"coder":      {"compile"},
	"executor":   {"run_job"},
}
