package apibudget_test

import (
	"go/build"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/blackboardkernel/bk/"

// layers assigns each library package (by its directory, relative to the
// module root) a layer: a package may import packages of its own layer or
// of a lower one, never of a higher one. internal/... is layer 0 as a
// whole, except where a more specific entry names it; an entry ending in
// "/..." covers the directory and everything below it.
var layers = []struct {
	layer int
	dirs  []string
}{
	{0, []string{"canon", "reason", "internal/..."}},
	{1, []string{"blackboard", "internal/expr"}},
	{2, []string{"chain"}},
	{3, []string{"store"}},
	{4, []string{"store/memstore", "store/sqlitestore", "store/pgstore", "store/internal/...", "store/storetest", "internal/ledger"}},
	{5, []string{"kernel"}},
	{6, []string{"audit", "rules", "validator", "worker", "budget", "failure", "internal/advisor", "internal/reply", "internal/snapshot", "internal/pressure"}},
	{7, []string{"toolgate", "mask"}},
	{8, []string{"adaptive", "orchestrator", "pack", "replay", "sim", "supervisor", "invariant", "invariant/invarianttest",
		"toolgate/adaptertest", "worker/llm"}},
	{9, []string{"inspect", "inspect/console", "inspect/console/browsertest", "internal/inspect"}},
	{10, []string{"internal/inspect/serve"}},
}

// layerOf returns the layer of the package in dir, the most specific
// entry winning; ok is false for a package no entry covers.
func layerOf(dir string) (layer int, ok bool) {
	best := -1
	for _, l := range layers {
		for _, d := range l.dirs {
			prefix, tree := strings.CutSuffix(d, "/...")
			if dir == prefix || tree && strings.HasPrefix(dir, prefix+"/") {
				if len(prefix) > best {
					best, layer, ok = len(prefix), l.layer, true
				}
			}
		}
	}
	return layer, ok
}

// library reports whether dir holds a package of the library: not a
// command, example, benchmark, adapter module or test data.
func library(dir string) bool {
	for _, p := range []string{"bench", "cmd", "examples", "adapters", "testdata"} {
		if dir == p || strings.HasPrefix(dir, p+"/") || strings.Contains(dir, "/"+p+"/") || strings.HasSuffix(dir, "/"+p) {
			return false
		}
	}
	return true
}

// TestLayers: no package of the library imports a package of a higher
// layer (see layers), in the default build and in the bkmutate build, and
// every library package has a layer. So blackboard imports nothing of the
// module's but internal packages, a store is built against the store
// contract alone, the conformance suite imports no kernel, and so up to the
// inspector, which may import anything. Test files are not held to it.
func TestLayers(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if rel != "." && (strings.HasPrefix(d.Name(), ".") || !library(rel)) {
			return filepath.SkipDir
		}
		for _, tags := range [][]string{nil, {"bkmutate"}} {
			ctx := build.Default
			ctx.BuildTags = tags
			p, err := ctx.ImportDir(path, 0)
			if err != nil {
				if _, none := err.(*build.NoGoError); none {
					return nil
				}
				return err
			}
			if p.Name == "main" {
				return nil
			}
			if tags == nil {
				found++
			}
			layer, ok := layerOf(rel)
			if !ok {
				t.Errorf("package %s has no layer: add it to layers", rel)
				return nil
			}
			for _, imp := range p.Imports {
				dep, ours := strings.CutPrefix(imp, module)
				if !ours {
					continue
				}
				l, ok := layerOf(dep)
				if !ok {
					t.Errorf("%s imports %s, which has no layer", rel, dep)
				} else if l > layer {
					t.Errorf("%s (layer %d, tags %v) imports %s (layer %d): an upward arrow", rel, layer, tags, dep, l)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 20 {
		t.Fatalf("found %d library packages under %s: the walk is wrong", found, root)
	}
}
