package toolgate

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/blackboardkernel/bk/internal/ident"
)

// Names and strings as the gate checks them and as its records keep them.

// checkName refuses caller and intent names the kernel would refuse as a
// kind, and long ones.
func checkName(s string) error { return checkLen(s, 256) }

// maxToolName bounds a tool's name.
const maxToolName = 64

// isToolName reports whether s is a tool name: 1 to 64 ASCII letters,
// digits, '_', '.' and '-', what model frameworks accept. Nothing else a
// model sends as a tool name reaches a record as it is, so no escape
// sequence can reach an operator's terminal through one.
func isToolName(s string) bool {
	if s == "" || len(s) > maxToolName {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// checkToolName refuses a tool name that is not a name ([isToolName]).
func checkToolName(s string) error {
	if toolNameChecked() && !isToolName(s) {
		return fmt.Errorf("the name is not 1 to %d of A-Z, a-z, 0-9, _, . and -", maxToolName)
	}
	return checkName(s)
}

// invalidTool is the kind under which a call naming no tool name is
// refused.
const invalidTool = "invalid_tool_name"

// toolLabel is a called tool's name where a label is wanted (a kind, a
// span, the loop guard): the name when it is one, else invalidTool.
func toolLabel(s string) string {
	if !toolNameChecked() {
		return clip(s)
	}
	if !isToolName(s) {
		return invalidTool
	}
	return s
}

// recordedTool is a called tool's name as decision records keep it: the
// name when it is one, else escapedTool.
func recordedTool(s string) string {
	if !toolNameChecked() || isToolName(s) {
		return clip(s)
	}
	return escapedTool(s)
}

// escapedTool shows a string that is not a tool name: its first 64 bytes,
// quoted with every byte outside printable ASCII escaped.
func escapedTool(s string) string {
	if len(s) > maxToolName {
		return strconv.QuoteToASCII(s[:maxToolName]) + "..."
	}
	return strconv.QuoteToASCII(s)
}

// checkTrace refuses trace ids the kernel would refuse.
func checkTrace(s string) error { return checkLen(s, 512) }

func checkLen(s string, limit int) error { return ident.Check(s, limit) }

// clip makes a caller's string fit a record: valid UTF-8, cut after
// about 256 bytes.
func clip(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= 256 {
		return s
	}
	cut := 256
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func quote(s string) string { return fmt.Sprintf("%q", s) }
