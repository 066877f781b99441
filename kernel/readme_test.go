package kernel_test

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeSnippetIsExampleNew keeps the README's first Go snippet that is
// not a whole program honest: it must be the body of ExampleNew, which
// compiles and runs as a test. (The install section's program, a package
// main, is built and run by .ci/install-check.)
func TestReadmeSnippetIsExampleNew(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var snippet string
	for rest := string(readme); snippet == ""; {
		var ok bool
		if _, rest, ok = strings.Cut(rest, "```go\n"); !ok {
			t.Fatal("README has no Go snippet but whole programs")
		}
		var block string
		block, rest, _ = strings.Cut(rest, "```")
		if !strings.HasPrefix(block, "package ") {
			snippet = block
		}
	}
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
