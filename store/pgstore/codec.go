package pgstore

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/store/internal/column"
)

// columns are the record columns a read returns, in the order scan reads
// them: the append order in the store and in the trace, then the record.
const columns = "seq, pos, id, trace_id, slot, mode, kind, payload, role, writer, ts_ms, " +
	"input_refs, confidence, ttl_ms, evidence_refs, status, reason, scope, namespace, span"

// row is a record encoded for the insert statement, with the trace it
// belongs to (the one whose counter gives its position).
type row struct {
	trace     string
	namespace string // the record's, as stored
	args      []any  // the insert's parameters; args[2] is set by Apply
}

// encode returns the insert parameters of r, which [store.Batch.Check]
// passed, refusing what PostgreSQL cannot store. Enumerations are
// stored by their stable names, the payload as JSONB and the reference
// lists as text arrays (a nil list as NULL). An empty namespace is stored
// as [blackboard.DefaultNamespace], as the store contract asks.
func encode(r *blackboard.Record) (row, error) {
	if !r.Provenance.Role.Valid() {
		return row{}, fmt.Errorf("pgstore: record %s: %w: role %q", r.ID, blackboard.ErrInvalidInput, r.Provenance.Role)
	}
	role := string(r.Provenance.Role)
	p := &r.Provenance
	// PostgreSQL text cannot hold a NUL character: refuse rather than alter.
	if hasNUL(r.ID, r.Kind, p.TraceID, p.Writer, string(r.Reason), r.Namespace, p.Span) || hasNUL(p.InputRefs...) || hasNUL(r.EvidenceRefs...) {
		return row{}, fmt.Errorf("pgstore: record %s: %w: a string holds a NUL character, which PostgreSQL text cannot store", r.ID, blackboard.ErrInvalidInput)
	}
	var confidence *float64
	if c := p.Confidence; c != nil {
		if math.IsNaN(*c) {
			return row{}, fmt.Errorf("pgstore: record %s: %w: NaN confidence", r.ID, blackboard.ErrInvalidInput)
		}
		v := *c
		confidence = &v
	}
	payload, err := json.Marshal(r.Payload)
	if err != nil {
		return row{}, fmt.Errorf("pgstore: record %s: %w: %v", r.ID, blackboard.ErrInvalidPayload, err)
	}
	if jsonHasNUL(payload) {
		return row{}, fmt.Errorf("pgstore: record %s: %w: a payload string holds a NUL character, which JSONB cannot store", r.ID, blackboard.ErrInvalidPayload)
	}
	namespace := r.Namespace
	if namespace == "" {
		namespace = blackboard.DefaultNamespace
	}
	return row{trace: p.TraceID, args: []any{
		r.ID, p.TraceID, int64(0), string(r.Slot), string(r.Mode), r.Kind, string(payload),
		role, p.Writer, p.TimestampMS, p.InputRefs, confidence, p.TTLMS, r.EvidenceRefs,
		string(r.Status), string(r.Reason), string(r.Scope), namespace, p.Span,
	}, namespace: namespace}, nil
}

// hasNUL reports whether any of ss holds a NUL byte.
func hasNUL(ss ...string) bool {
	for _, s := range ss {
		if strings.IndexByte(s, 0) >= 0 {
			return true
		}
	}
	return false
}

// jsonHasNUL reports whether JSON text holds the escape \u0000 (how
// encoding/json writes a NUL character), which JSONB refuses. It walks the
// escapes, so that an escaped backslash followed by "u0000" is not taken
// for one.
func jsonHasNUL(b []byte) bool {
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) && string(b[i+2:i+6]) == "0000" {
			return true
		}
		i++ // skip the escaped character
	}
	return false
}

// storable reports whether s could be a string the store holds: valid
// UTF-8 without NUL. A lookup by any other string finds nothing, and is
// answered without asking the server, which would refuse the parameter.
func storable(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

// scanner is a pgx.Row or pgx.Rows.
type scanner interface{ Scan(dest ...any) error }

// scan reads the columns of one record.
func scan(rows scanner) (seq, pos int64, r blackboard.Record, err error) {
	var c column.Text
	p := &r.Provenance
	err = rows.Scan(&seq, &pos, &r.ID, &p.TraceID, &c.Slot, &c.Mode, &r.Kind, &c.Payload, &c.Role, &p.Writer, &p.TimestampMS,
		&p.InputRefs, &p.Confidence, &p.TTLMS, &r.EvidenceRefs, &c.Status, &c.Reason, &c.Scope, &r.Namespace, &p.Span)
	if err != nil {
		return 0, 0, blackboard.Record{}, err
	}
	if err := column.Decode(c, &r); err != nil {
		return 0, 0, blackboard.Record{}, fmt.Errorf("pgstore: record %s: %w", r.ID, err)
	}
	return seq, pos, r, nil
}
