package advisor

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxCandidates bounds how many '{' positions Extract tries in one piece of
// text, so that a long answer full of braces costs linear time.
const maxCandidates = 64

const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
	fence      = "```"
)

// Extract finds the JSON object in a model's answer. It first removes the
// reasoning: every <think>…</think> block, everything up to a </think> that
// was never opened (chat templates that open the block in the prompt), and
// everything from a <think> that is never closed (an answer cut while
// thinking). In what is left it takes the first JSON object inside a ```
// or ```json fence, else the first JSON object anywhere in the text, prose
// around it allowed; it tries at most 64 '{' positions per fence and in the
// text.
//
// An answer without such an object (empty, prose only, a refusal, malformed
// JSON, a number or a list that holds no object) returns an error wrapping
// [ErrUnparsable].
// Extract never panics.
func Extract(text string) (map[string]any, error) {
	s := stripThink(text)
	for _, block := range fenced(s) {
		if m := firstObject(block); m != nil {
			return m, nil
		}
	}
	if m := firstObject(s); m != nil {
		return m, nil
	}
	return nil, fmt.Errorf("%w: no JSON object in %s", ErrUnparsable, brief(s))
}

// stripThink removes reasoning blocks.
func stripThink(s string) string {
	for {
		i, j := strings.Index(s, thinkOpen), strings.Index(s, thinkClose)
		switch {
		case j >= 0 && (i < 0 || j < i): // closed but never opened
			s = s[j+len(thinkClose):]
		case i >= 0 && j < 0: // opened, never closed
			s = s[:i]
		case i >= 0: // a complete block
			s = s[:i] + s[j+len(thinkClose):]
		default:
			return s
		}
	}
}

// fenced returns the contents of the ``` fences of s, in order; an
// unterminated last fence runs to the end. An info string such as "json"
// stays in the block: [firstObject] skips it.
func fenced(s string) []string {
	var out []string
	for {
		i := strings.Index(s, fence)
		if i < 0 {
			return out
		}
		s = s[i+len(fence):]
		j := strings.Index(s, fence)
		if j < 0 {
			return append(out, s)
		}
		out = append(out, s[:j])
		s = s[j+len(fence):]
	}
}

// firstObject decodes the first JSON object that starts at one of the first
// maxCandidates '{' of s; text after the object is ignored. It returns nil
// when there is none.
func firstObject(s string) map[string]any {
	off := 0
	for range maxCandidates {
		i := strings.IndexByte(s[off:], '{')
		if i < 0 {
			return nil
		}
		start := off + i
		var m map[string]any
		if json.NewDecoder(strings.NewReader(s[start:])).Decode(&m) == nil && m != nil {
			return m
		}
		off = start + 1
	}
	return nil
}

// brief quotes the start of an answer for an error message.
func brief(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "an empty answer"
	}
	return fmt.Sprintf("%q", clip(s, 80))
}

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
