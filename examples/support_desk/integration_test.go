package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// integrationLines counts the integration code as the README does: the
// non-blank lines of integration.go that are not comments, and the lines
// of run.go marked "// integration".
func integrationLines(t *testing.T) int {
	t.Helper()
	n := 0
	for _, f := range []string{"integration.go", "run.go"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(line)
			switch {
			case f == "integration.go" && line != "" && !strings.HasPrefix(line, "//"):
				n++
			case f == "run.go" && strings.HasSuffix(line, "// integration"):
				n++
			}
		}
	}
	return n
}

// Issue 26's bound: at most 60 lines of integration code, and the README
// says how many there are.
func TestIntegrationLines(t *testing.T) {
	n := integrationLines(t)
	if n > 60 {
		t.Errorf("%d lines of integration code, want at most 60", n)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("%d lines of integration code", n); !strings.Contains(string(readme), want) {
		t.Errorf("the README does not say %q", want)
	}
}
