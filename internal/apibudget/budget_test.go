package apibudget

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite names.txt from the code")

const root = "../.."

// The budget: growth past these is a decision made in review, by changing
// the constant in the same change that adds the names. Each ceiling is
// what the library exports now. Issue 37 brought them within 1,200 names
// in the library, 120 in toolgate, 25 methods on *Gate and 200 in kernel
// + blackboard; issue 38 (a history anyone can check) added, on purpose,
// package chain (the hash chain, checkpoints, evidence bundles and their
// verifier: 79 names), store.Chainer and VerifyTrace, the stores' Chain
// and Head, canon.AppendBinary, the kernel's Signer, CheckpointEvery,
// OnCheckpoint and Checkpoint, and toolgate.Result.Receipt.
const (
	maxLibrary      = 1292 // exported names of the library, test-support packages excluded
	maxToolgate     = 121  // package toolgate
	maxGateMethods  = 25   // methods on *toolgate.Gate, exported or not
	maxKernelVocab  = 204  // kernel + blackboard: what an integrator imports
	maxFileLines    = 700  // any non-test Go file in the repository
	namesFile       = "names.txt"
	namesFileHeader = "# The library's exported names, one per line (package, name). Regenerate with\n# go test ./internal/apibudget -run TestNames -update; review the diff.\n"
)

func names(t *testing.T) map[string][]string {
	t.Helper()
	m, err := Names(root)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestNames: the checked-in list is the code's list, so a change that adds
// an exported name shows it in names.txt.
func TestNames(t *testing.T) {
	m := names(t)
	var b bytes.Buffer
	b.WriteString(namesFileHeader)
	dirs := make([]string, 0, len(m))
	for d := range m {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		for _, n := range m[d] {
			fmt.Fprintf(&b, "%s %s\n", d, n)
		}
	}
	if *update {
		if err := os.WriteFile(namesFile, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(namesFile)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(want, b.Bytes()) {
		return
	}
	got := lines(b.Bytes())
	old := lines(want)
	for _, l := range got {
		if !slices.Contains(old, l) {
			t.Errorf("new exported name not in %s: %s", namesFile, l)
		}
	}
	for _, l := range old {
		if !slices.Contains(got, l) {
			t.Errorf("%s lists a name the code no longer exports: %s", namesFile, l)
		}
	}
	t.Log("run go test ./internal/apibudget -run TestNames -update and review the diff")
}

func lines(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if l := sc.Text(); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// TestTargets holds the surface to its budget.
func TestTargets(t *testing.T) {
	m := names(t)
	lib := 0
	for d, ns := range m {
		if !TestSupport(d) {
			lib += len(ns)
		}
	}
	if lib > maxLibrary {
		t.Errorf("library exports %d names, budget %d", lib, maxLibrary)
	}
	if n := len(m["toolgate"]); n > maxToolgate {
		t.Errorf("toolgate exports %d names, budget %d", n, maxToolgate)
	}
	if n := len(m["kernel"]) + len(m["blackboard"]); n > maxKernelVocab {
		t.Errorf("kernel + blackboard export %d names, budget %d", n, maxKernelVocab)
	}
	gm, err := Methods(filepath.Join(root, "toolgate"), "Gate")
	if err != nil {
		t.Fatal(err)
	}
	if gm > maxGateMethods {
		t.Errorf("*toolgate.Gate has %d methods, budget %d", gm, maxGateMethods)
	}
	t.Logf("library %d names, toolgate %d, kernel+blackboard %d, *Gate methods %d", lib, len(m["toolgate"]), len(m["kernel"])+len(m["blackboard"]), gm)
}

// eachGoFile calls fn with the path and contents of every non-test Go file
// in the repository, skipping hidden directories.
func eachGoFile(t *testing.T, fn func(path string, b []byte)) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err == nil {
			fn(path, b)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestFileSizes: no non-test Go file is longer than a reader can hold.
func TestFileSizes(t *testing.T) {
	eachGoFile(t, func(path string, b []byte) {
		if n := bytes.Count(b, []byte("\n")); n > maxFileLines {
			t.Errorf("%s: %d lines, at most %d", path, n, maxFileLines)
		}
	})
}

// TestMutationFiles: a package keeps its mutation switches in one file, out
// of the way of the code a reader follows.
func TestMutationFiles(t *testing.T) {
	per := map[string][]string{}
	eachGoFile(t, func(path string, b []byte) {
		if bytes.HasPrefix(b, []byte("//go:build bkmutate\n")) {
			per[filepath.Dir(path)] = append(per[filepath.Dir(path)], filepath.Base(path))
		}
	})
	for dir, files := range per {
		// The mutation runner (a command built only with the tag) and
		// the registry itself are the scheme, not switches.
		if len(files) > 1 && !strings.HasSuffix(dir, "internal/mutant") && !strings.HasSuffix(dir, "bench/mutation") {
			t.Errorf("%s: switches in %d files %v, want one", dir, len(files), files)
		}
	}
}
