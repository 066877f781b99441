package kernel_test

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeSnippetIsExampleNew keeps the README's first Go snippet honest:
// it must be the body of ExampleNew, which compiles and runs as a test.
func TestReadmeSnippetIsExampleNew(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "```go\n")
	if !ok {
		t.Fatal("README has no Go snippet")
	}
	snippet, _, _ := strings.Cut(rest, "```")
	_, body, ok := strings.Cut(string(src), "func ExampleNew() {\n")
	if !ok {
		t.Fatal("example_test.go has no ExampleNew")
	}
	body, _, _ = strings.Cut(body, "\n}\n")
	if norm(snippet) != norm(body) {
		t.Errorf("README snippet and ExampleNew differ:\nREADME:\n%s\nExampleNew:\n%s", snippet, body)
	}
}

// norm drops indentation and blank lines.
func norm(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
