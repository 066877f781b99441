package inspect

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Inert returns s as a terminal may show it: every character a terminal
// or a text layout could act on is replaced by an escape that reads as
// text. Stored text (a kind, a tool name a model chose, a fallback's
// reason) is written by whoever could write a record, and printed to an
// operator who trusts what the inspector shows, so an escape sequence in it
// must not erase lines, move the cursor or write the clipboard, and a
// newline or a bidirectional override must not forge a line or reorder
// one. Escaped: C0 controls and DEL (\n, \r, \t, else \x1b), C1 controls
// U+0080–U+009F (\x9b), bytes that are not UTF-8 (\xff, which an 8-bit
// terminal could read as C1), bidirectional controls (U+061C, U+200E,
// U+200F, U+202A–U+202E, U+2066–U+2069) and the line and paragraph
// separators U+2028, U+2029 (\u202e). Everything else is kept as it is.
// [TimelineReport.WriteText] and [Explanation.WriteText] print every stored
// field through it; [InertJSON] is its counterpart for JSON text. Safe for
// concurrent use.
func Inert(s string) string {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if active(r, n) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s // the common case: nothing to escape
	}
	var sb strings.Builder
	sb.Grow(len(s) + 8)
	sb.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case !active(r, n):
			sb.WriteString(s[i : i+n])
		case r == '\n':
			sb.WriteString(`\n`)
		case r == '\r':
			sb.WriteString(`\r`)
		case r == '\t':
			sb.WriteString(`\t`)
		case r == utf8.RuneError:
			fmt.Fprintf(&sb, `\x%02x`, s[i]) // a byte that is not UTF-8
		case r < 0x100:
			fmt.Fprintf(&sb, `\x%02x`, r)
		default:
			fmt.Fprintf(&sb, `\u%04x`, r)
		}
		i += n
	}
	return sb.String()
}

// InertJSON returns JSON text with the characters [Inert] escapes that
// encoding/json leaves raw (DEL, C1 controls, bidirectional controls; it
// escapes the other C0 controls and the separators itself) written as
// \uXXXX escapes: the same JSON value, printable to a terminal. Such
// characters can only stand inside JSON strings, where the escape means
// the same. Text that is not UTF-8 has its invalid bytes replaced by
// U+FFFD. Safe for concurrent use.
func InertJSON(b []byte) []byte {
	i := 0
	for i < len(b) {
		r, n := utf8.DecodeRune(b[i:])
		if active(r, n) && r >= 0x20 {
			break
		}
		i += n
	}
	if i == len(b) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	out = append(out, b[:i]...)
	for i < len(b) {
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			out = append(out, `\ufffd`...)
		case active(r, n) && r >= 0x20:
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, b[i:i+n]...)
		}
		i += n
	}
	return out
}

// active reports whether the rune r, read from n bytes, is one a terminal
// or a layout acts on (see [Inert]).
func active(r rune, n int) bool {
	if mutInertText {
		return false
	}
	return acts(r, n)
}

func acts(r rune, n int) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r == utf8.RuneError && n == 1:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x2028 && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}
