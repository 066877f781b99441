package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// maxIntegrationLines bounds the integration code: integration.go holds
// all of it, with the approval screen, the ticket loop and the restart
// wait, as issue 37 asks.
const maxIntegrationLines = 60

// codeLines counts a file's code as the README does: its non-blank lines
// that are not comments.
func codeLines(t *testing.T, name string) int {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "//") {
			n++
		}
	}
	return n
}

// The integration code stays within its bound, no other file of the
// desk claims a line of it, and the README says how many lines there are,
// and how many the policy (policy.go) takes beside them.
func TestIntegrationLines(t *testing.T) {
	n := codeLines(t, "integration.go")
	if n > maxIntegrationLines {
		t.Errorf("%d lines of integration code, want at most %d", n, maxIntegrationLines)
	}
	files, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !strings.HasSuffix(f.Name(), ".go") || f.Name() == "integration.go" || f.Name() == "integration_test.go" {
			continue
		}
		data, err := os.ReadFile(f.Name())
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "// integration\n") {
			t.Errorf("%s marks a line as integration code: it belongs in integration.go", f.Name())
		}
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{fmt.Sprintf("%d lines of integration code", n),
		fmt.Sprintf("`policy.go`, %d lines counted the same way", codeLines(t, "policy.go"))} {
		if !strings.Contains(string(readme), want) {
			t.Errorf("the README does not say %q", want)
		}
	}
}
