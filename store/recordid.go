package store

import (
	"cmp"
	"strconv"
	"strings"

	"github.com/blackboardkernel/bk/blackboard"
)

// RecordID is the id the kernel gives the n-th record (from 1) of trace
// traceID of namespace: "{slot}:{trace}:{n}" in the default namespace (""
// or [blackboard.DefaultNamespace]), and "{slot}@{namespace}:{trace}:{n}" in any
// other, with "%" and ":" in the namespace written "%25" and "%3A"; so one
// trace id in two namespaces gives two ids, and no two (namespace, trace,
// slot, n) share one. A store may rely on the form to place a record by its
// id ([SplitRecordID]); a record with any other id is valid.
func RecordID(slot blackboard.Slot, namespace, traceID string, n int) string {
	if cmp.Or(namespace, blackboard.DefaultNamespace) == blackboard.DefaultNamespace {
		return string(slot) + ":" + traceID + ":" + strconv.Itoa(n)
	}
	return string(slot) + "@" + idEscaper.Replace(namespace) + ":" + traceID + ":" + strconv.Itoa(n)
}

// idEscaper writes a namespace as a [RecordID] holds it: without a colon,
// which ends it.
var idEscaper = strings.NewReplacer("%", "%25", ":", "%3A")

// unescapeNS reads a namespace as [RecordID] wrote it; ok is false for a
// form RecordID never writes.
func unescapeNS(s string) (string, bool) {
	if !strings.Contains(s, "%") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "%25"):
			b.WriteByte('%')
		case strings.HasPrefix(s[i:], "%3A"):
			b.WriteByte(':')
		default:
			return "", false
		}
		i += 2
	}
	return b.String(), true
}

// SplitRecordID parses an id of the [RecordID] form into its namespace
// ([blackboard.DefaultNamespace] for the default form), trace and n-1 (the record's
// index in its trace); ok is false for any other id.
func SplitRecordID(id string) (namespace, traceID string, idx int, ok bool) {
	namespace = blackboard.DefaultNamespace
	first := strings.IndexAny(id, ":@")
	if first < 0 {
		return "", "", 0, false
	}
	if id[first] == '@' {
		end := strings.IndexByte(id[first+1:], ':')
		if end < 0 {
			return "", "", 0, false
		}
		if namespace, ok = unescapeNS(id[first+1 : first+1+end]); !ok || cmp.Or(namespace, blackboard.DefaultNamespace) == blackboard.DefaultNamespace {
			return "", "", 0, false
		}
		first += 1 + end
	}
	last := strings.LastIndexByte(id, ':')
	if last <= first+1 || last == len(id)-1 {
		return "", "", 0, false
	}
	n, err := strconv.Atoi(id[last+1:])
	if err != nil || n < 1 || id[last+1] == '+' || id[last+1] == '0' {
		return "", "", 0, false
	}
	return namespace, id[first+1 : last], n - 1, true
}
