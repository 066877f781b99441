//go:build bkmutate

package main

import (
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/blackboardkernel/bk/internal/mutant"
)

// mutantPath is the import path of the switch registry.
const mutantPath = modulePath + "/internal/mutant"

// everySwitch is every switch of the tree: those the runner links (the
// core module's, [mutant.All]) and those of the modules nested under root
// (the framework adapters, each a module of its own that the runner cannot
// link). A name registered twice is an error.
func everySwitch(root string) ([]mutant.Switch, error) {
	nested, err := nestedSwitches(root)
	if err != nil {
		return nil, err
	}
	all := append(mutant.All(), nested...)
	seen := map[string]bool{}
	for _, s := range all {
		if seen[s.Name] {
			return nil, fmt.Errorf("switch %q registered twice", s.Name)
		}
		seen[s.Name] = true
	}
	return all, nil
}

// nestedSwitches reads the switches that the packages of the modules
// nested under root register, from their source: the files a bkmutate
// build compiles, and in them each mutant.Register call, whose package
// and Defs must be literals. Their tests run in their own module
// (buildTests), with BK_MUTATE naming the switch; the adversary is never
// played against them, as they are not the kernel's.
func nestedSwitches(root string) ([]mutant.Switch, error) {
	ctx := build.Default
	ctx.BuildTags = append(slices.Clone(ctx.BuildTags), "bkmutate")
	var out []mutant.Switch
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || moduleDir(filepath.Dir(path)) == root {
			return nil
		}
		if ok, err := ctx.MatchFile(filepath.Dir(path), name); err != nil || !ok {
			return err
		}
		found, err := registered(path)
		out = append(out, found...)
		return err
	})
	return out, err
}

// registered returns the switches the mutant.Register calls of the Go
// file at path declare.
func registered(path string) ([]mutant.Switch, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	local := ""
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == mutantPath {
			local = "mutant"
			if imp.Name != nil {
				local = imp.Name.Name
			}
		}
	}
	if local == "" {
		return nil, nil
	}
	var out []mutant.Switch
	var bad error
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || bad != nil || !isSelector(call.Fun, local, "Register") {
			return bad == nil
		}
		at := fset.Position(call.Pos())
		fail := func(what string) bool {
			bad = fmt.Errorf("%s: mutant.Register: %s is not a literal the runner can read", at, what)
			return false
		}
		if len(call.Args) == 0 {
			return fail("the package")
		}
		pkg, ok := stringOf(call.Args[0])
		if !ok {
			return fail("the package")
		}
		for _, arg := range call.Args[1:] {
			lit, ok := arg.(*ast.CompositeLit)
			if !ok || !isSelector(lit.Type, local, "Def") {
				return fail("a Def")
			}
			s := mutant.Switch{Package: pkg, Tests: []string{pkg}}
			for _, el := range lit.Elts {
				kv, ok := el.(*ast.KeyValueExpr)
				key, _ := kv.Key.(*ast.Ident)
				if !ok || key == nil {
					return fail("a Def's field")
				}
				switch key.Name {
				case "Name":
					if s.Name, ok = stringOf(kv.Value); !ok {
						return fail("a Def's Name")
					}
				case "Check":
					if s.Check, ok = stringOf(kv.Value); !ok {
						return fail("a Def's Check")
					}
				case "Also":
					also, ok := kv.Value.(*ast.CompositeLit)
					if !ok {
						return fail("a Def's Also")
					}
					for _, e := range also.Elts {
						p, ok := stringOf(e)
						if !ok {
							return fail("a Def's Also")
						}
						s.Tests = append(s.Tests, p)
					}
				}
			}
			if s.Name == "" || s.Check == "" {
				return fail("a Def's Name or Check")
			}
			out = append(out, s)
		}
		return true
	})
	return out, bad
}

func isSelector(e ast.Expr, pkg, name string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == pkg && sel.Sel.Name == name
}

// stringOf is the value of a string literal, or of literals joined by +.
func stringOf(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", false
		}
		a, ok1 := stringOf(e.X)
		b, ok2 := stringOf(e.Y)
		return a + b, ok1 && ok2
	case *ast.ParenExpr:
		return stringOf(e.X)
	}
	return "", false
}

// moduleDir is the directory of the go.mod that holds the package in dir:
// dir's own, or its nearest ancestor's.
func moduleDir(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}

// packageDir is the directory of the package at import path pkg, in the
// core module or a module nested in it (their paths follow the tree).
func packageDir(pkg string) string {
	return filepath.Join(moduleRoot(), strings.TrimPrefix(strings.TrimPrefix(pkg, modulePath), "/"))
}
