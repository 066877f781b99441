package blackboard_test

import (
	"go/build"
	"strings"
	"testing"
)

const module = "github.com/blackboardkernel/bk/"

// TestLayers: the store contract stays apart from the kernel. blackboard
// imports nothing of the module's but the internal packages that carry the
// kernel's vouch and the mutation switches, and no store imports the
// kernel, so a
// store can be written, and built, against the contract alone.
func TestLayers(t *testing.T) {
	cases := []struct {
		dir     string
		allowed []string // module packages the non-test files may import
	}{
		{".", []string{"internal/vouch", "internal/mutant"}},
		{"../store/memstore", []string{"blackboard", "internal/mutant"}},
		{"../store/sqlitestore", []string{"blackboard", "store/internal/column", "internal/"}},
		{"../store/pgstore", []string{"blackboard", "store/internal/column", "internal/"}},
	}
	for _, c := range cases {
		for _, tags := range [][]string{nil, {"bkmutate"}} {
			ctx := build.Default
			ctx.BuildTags = tags
			p, err := ctx.ImportDir(c.dir, 0)
			if err != nil {
				t.Fatalf("%s: %v", c.dir, err)
			}
			for _, imp := range p.Imports {
				rel, ours := strings.CutPrefix(imp, module)
				if !ours {
					continue
				}
				ok := false
				for _, a := range c.allowed {
					ok = ok || rel == a || strings.HasSuffix(a, "/") && strings.HasPrefix(rel, a)
				}
				if !ok {
					t.Errorf("%s (tags %v) imports %s", c.dir, tags, imp)
				}
			}
		}
	}
}
