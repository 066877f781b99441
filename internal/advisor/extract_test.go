package advisor_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/internal/advisor"
)

var extractCases = []struct {
	name string
	text string
	want map[string]any // nil: ErrUnparsable
}{
	{"clean", `{"propose": true, "reason": "ok"}`, map[string]any{"propose": true, "reason": "ok"}},
	{"whitespace around", "\n\t {\"propose\": false} \n", map[string]any{"propose": false}},
	{"think block", "<think>Is the charge real? {\"propose\": false}</think>\n{\"propose\": true}", map[string]any{"propose": true}},
	{"two think blocks", "<think>a</think>{\"x\": 1}<think>b {\"x\": 2}</think>", map[string]any{"x": 1.0}},
	{"orphan think close", "the user wants {\"propose\": false} maybe</think>{\"propose\": true}", map[string]any{"propose": true}},
	{"unterminated leading think", "<think>I will answer {\"propose\": true} once I am sure", nil},
	{"think left open after the answer", "{\"propose\": true}\n<think>second thoughts {\"propose\": false}", map[string]any{"propose": true}},
	{"json fence", "Here you go:\n```json\n{\"propose\": true}\n```\nDone.", map[string]any{"propose": true}},
	{"JSON fence", "```JSON\n{\"propose\": false}\n```", map[string]any{"propose": false}},
	{"bare fence", "```\n{\"a\": [1, 2]}\n```", map[string]any{"a": []any{1.0, 2.0}}},
	{"fence on one line", "```json {\"a\": \"b\"}```", map[string]any{"a": "b"}},
	{"fence beats earlier prose object", "Example {\"propose\": false}\n```json\n{\"propose\": true}\n```", map[string]any{"propose": true}},
	{"fence without object, object in prose", "```\nno json here\n``` so: {\"ok\": true}", map[string]any{"ok": true}},
	{"unterminated fence", "```json\n{\"propose\": true}", map[string]any{"propose": true}},
	{"CRLF fence", "```json\r\n{\"propose\": true}\r\n```", map[string]any{"propose": true}},
	{"think then fence", "<think>hmm</think>\n```json\n{\"propose\": true}\n```", map[string]any{"propose": true}},
	{"prose before", "Sure! My answer is {\"propose\": true, \"reason\": \"fine\"}", map[string]any{"propose": true, "reason": "fine"}},
	{"prose after", "{\"propose\": false} -- I hope this helps.", map[string]any{"propose": false}},
	{"prose with a stray brace first", "Using {braces} loosely, the answer: {\"propose\": true}", map[string]any{"propose": true}},
	{"first valid of two", "{\"n\": 1} and {\"n\": 2}", map[string]any{"n": 1.0}},
	{"nested object", `{"outer": {"inner": {"x": null}}}`, map[string]any{"outer": map[string]any{"inner": map[string]any{"x": nil}}}},
	{"braces inside strings", `{"reason": "use } and { freely", "propose": true}`, map[string]any{"reason": "use } and { freely", "propose": true}},
	{"escaped quote in string", `{"reason": "say \"no\"", "propose": false}`, map[string]any{"reason": `say "no"`, "propose": false}},
	{"unicode", `Réponse : {"raison": "déjà vu ✓", "propose": true}`, map[string]any{"raison": "déjà vu ✓", "propose": true}},
	{"empty object", `{}`, map[string]any{}},
	{"malformed then valid", "{\"propose\": tru} I mean {\"propose\": true}", map[string]any{"propose": true}},
	{"empty", "", nil},
	{"blank", "  \n ", nil},
	{"refusal", "I'm sorry, but I can't help with that.", nil},
	{"malformed JSON", `{"propose": true, "reason": }`, nil},
	{"truncated JSON", `{"propose": true, "reason": "the charge is`, nil},
	{"single quotes", `{'propose': true}`, nil},
	{"object inside an array", `[{"propose": true}]`, map[string]any{"propose": true}},
	{"array of objects", `[1, 2]`, nil},
	{"bare number", `42`, nil},
	{"null", `null`, nil},
	{"only a think block", "<think>{\"propose\": true}</think>", nil},
	{"lone braces", "{{{{}", map[string]any{}},
	{"unbalanced", "{{{{", nil},
}

func TestExtract(t *testing.T) {
	for _, tc := range extractCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := advisor.Extract(tc.text)
			if tc.want == nil {
				if !errors.Is(err, advisor.ErrUnparsable) || got != nil {
					t.Fatalf("Extract(%q) = %v, %v; want nil and ErrUnparsable", tc.text, got, err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Extract(%q) = %v, %v; want %v", tc.text, got, err, tc.want)
			}
		})
	}
}

func TestExtractBoundsItsWork(t *testing.T) {
	// More stray braces than Extract tries before the answer: it gives up
	// rather than scanning every position (and a long answer stays cheap).
	text := strings.Repeat("{ ", 100) + `{"propose": true}`
	if _, err := advisor.Extract(text); !errors.Is(err, advisor.ErrUnparsable) {
		t.Errorf("err = %v; want ErrUnparsable after the candidate limit", err)
	}
	long := strings.Repeat(`{"a":`, 5000) + "x"
	if _, err := advisor.Extract(long); !errors.Is(err, advisor.ErrUnparsable) {
		t.Errorf("deep unterminated nesting: err = %v; want ErrUnparsable", err)
	}
}

func TestExtractErrorQuotesLittle(t *testing.T) {
	_, err := advisor.Extract(strings.Repeat("no json ", 1000))
	if err == nil || len(err.Error()) > 200 {
		t.Errorf("err = %v; want a short message", err)
	}
}

// FuzzExtract checks that Extract never panics, that it returns either an
// object or ErrUnparsable, and that an object it returns, encoded again
// (without fences inside its strings), extracts to itself. The seeds are
// the table above plus the corpus under testdata/fuzz/FuzzExtract; plain
// go test replays them.
func FuzzExtract(f *testing.F) {
	for _, tc := range extractCases {
		f.Add(tc.text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		m, err := advisor.Extract(text)
		if err != nil {
			if m != nil || !errors.Is(err, advisor.ErrUnparsable) {
				t.Fatalf("Extract(%q) = %v, %v; want nil and ErrUnparsable", text, m, err)
			}
			return
		}
		if m == nil {
			t.Fatalf("Extract(%q) = nil, nil", text)
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("Extract(%q) returned a value JSON cannot encode: %v", text, err)
		}
		if strings.Contains(string(b), "```") {
			return
		}
		again, err := advisor.Extract(string(b))
		if err != nil || !reflect.DeepEqual(again, m) {
			t.Fatalf("Extract(%s) = %v, %v; want %v back", b, again, err, m)
		}
	})
}

// Extract reads the verdict out of a reasoning model's answer.
func ExampleExtract() {
	m, err := advisor.Extract("<think>The charge is disputed.</think>\nMy answer:\n```json\n{\"propose\": true, \"reason\": \"disputed\"}\n```")
	fmt.Println(m["propose"], m["reason"], err)

	_, err = advisor.Extract("I can't help with that.")
	fmt.Println(err)
	// Output:
	// true disputed <nil>
	// llm: unparsable answer: no JSON object in "I can't help with that."
}
