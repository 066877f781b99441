package sqlitestore

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"math"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/store/internal/column"
)

// columns are the record columns, in the order encode returns them and
// scan reads them (after seq).
const columns = "id, trace_id, slot, mode, kind, payload, role, writer, ts_ms, " +
	"input_refs, confidence, ttl_ms, evidence_refs, status, reason, scope, namespace, span"

// encode returns the values of r's columns and, last, two for its link
// and position, which Apply fills ([store.Batch.Check] passed r).
// Enumerations
// are stored by their stable names, the payload and the reference lists as
// JSON; a nil reference list is NULL, a nil payload is JSON null. An empty
// namespace is stored as [blackboard.DefaultNamespace], as the store contract
// asks, so that it reads back the same from every store.
func encode(r *blackboard.Record) ([]any, error) {
	if !r.Provenance.Role.Valid() {
		return nil, fmt.Errorf("sqlitestore: record %s: %w: role %q", r.ID, blackboard.ErrInvalidInput, r.Provenance.Role)
	}
	role := string(r.Provenance.Role)
	var confidence any
	if c := r.Provenance.Confidence; c != nil {
		if math.IsNaN(*c) {
			return nil, fmt.Errorf("sqlitestore: record %s: %w: NaN confidence", r.ID, blackboard.ErrInvalidInput)
		}
		confidence = *c
	}
	payload, err := encodeJSON(r.ID, "payload", r.Payload)
	if err != nil {
		return nil, err
	}
	inputs, err := encodeJSON(r.ID, "input refs", r.Provenance.InputRefs)
	if err != nil {
		return nil, err
	}
	evidence, err := encodeJSON(r.ID, "evidence refs", r.EvidenceRefs)
	if err != nil {
		return nil, err
	}
	namespace := r.Namespace
	if namespace == "" {
		namespace = blackboard.DefaultNamespace
	}
	return []any{
		r.ID, r.Provenance.TraceID, string(r.Slot), string(r.Mode), r.Kind, payload,
		role, r.Provenance.Writer, r.Provenance.TimestampMS,
		inputs, confidence, r.Provenance.TTLMS, evidence,
		string(r.Status), string(r.Reason), string(r.Scope), namespace, r.Provenance.Span,
		nil, nil, // link and link_seq: set in the transaction, from the trace's head
	}, nil
}

// The indexes in encode's values of the columns Apply reads or sets.
const (
	colTrace     = 1
	colPayload   = 5
	colNamespace = 16
	colLink      = 18
	colLinkSeq   = 19
)

// encodeJSON returns v as JSON text, or nil (SQL NULL) for a nil reference
// list; a nil payload becomes the text null, which decodes back to nil.
// JSON would silently replace a string that is not valid UTF-8; encode has
// already refused those through [store.Batch.Check].
func encodeJSON(id, what string, v any) (any, error) {
	if refs, ok := v.([]string); ok && refs == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: record %s: %w: %s: %v", id, blackboard.ErrInvalidPayload, what, err)
	}
	return string(b), nil
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// scanMore is a scanner that reads the columns after a record's into
// more: scan reads a record from a query that selects more than one.
type scanMore struct {
	sc   scanner
	more []any
}

func (m scanMore) Scan(dest ...any) error { return m.sc.Scan(append(dest, m.more...)...) }

// scan reads seq and the record columns.
func scan(sc scanner) (seq int64, r blackboard.Record, err error) {
	var c column.Text
	var inputs, evidence []byte
	var confidence sql.NullFloat64
	p := &r.Provenance
	err = sc.Scan(&seq, &r.ID, &p.TraceID, &c.Slot, &c.Mode, &r.Kind, &c.Payload, &c.Role, &p.Writer, &p.TimestampMS,
		&inputs, &confidence, &p.TTLMS, &evidence, &c.Status, &c.Reason, &c.Scope, &r.Namespace, &p.Span)
	if err != nil {
		return 0, blackboard.Record{}, err
	}
	err = column.Decode(c, &r)
	if err == nil {
		if err = decodeRefs(inputs, &p.InputRefs); err != nil {
			err = fmt.Errorf("corrupt column input_refs: %v", err)
		} else if err = decodeRefs(evidence, &r.EvidenceRefs); err != nil {
			err = fmt.Errorf("corrupt column evidence_refs: %v", err)
		}
	}
	if err != nil {
		return 0, blackboard.Record{}, fmt.Errorf("sqlitestore: record %s: %w", r.ID, err)
	}
	if confidence.Valid {
		p.Confidence = &confidence.Float64
	}
	return seq, r, nil
}

// decodeRefs decodes a JSON list of ids; NULL stays nil.
func decodeRefs(b []byte, dst *[]string) error {
	if b == nil {
		return nil
	}
	return json.Unmarshal(b, dst)
}
