package apibudget

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Excluded reports whether a package directory (slash-separated, relative to
// the module root) is outside the library: commands, examples, benchmarks,
// internal packages and the adapters' own modules.
func Excluded(dir string) bool {
	for _, p := range []string{"bench", "cmd", "examples", "adapters", "internal", "testdata"} {
		if dir == p || strings.HasPrefix(dir, p+"/") || strings.Contains(dir, "/"+p+"/") || strings.HasSuffix(dir, "/"+p) {
			return true
		}
	}
	return false
}

// TestSupport reports whether a package exists to test other code
// (conformance suites, adapter checks, browser tests): counted apart.
func TestSupport(dir string) bool {
	base := filepath.Base(dir)
	return strings.HasSuffix(base, "test") || base == "browsertest"
}

// Names walks the module rooted at root and returns, per package directory,
// the sorted exported names: "T", "T.Field", "T.Method", "F", "C".
// Files are selected as the default build would select them (no tags).
func Names(root string) (map[string][]string, error) {
	out := map[string][]string{}
	ctx := build.Default
	ctx.BuildTags = nil
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if rel != "." && (strings.HasPrefix(d.Name(), ".") || Excluded(rel)) {
			return filepath.SkipDir
		}
		pkg, err := ctx.ImportDir(path, 0)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			return err
		}
		if pkg.Name == "main" {
			return nil
		}
		fset := token.NewFileSet()
		var names []string
		for _, f := range pkg.GoFiles {
			file, err := parser.ParseFile(fset, filepath.Join(path, f), nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			names = append(names, fileNames(file)...)
		}
		sort.Strings(names)
		out[rel] = names
		return nil
	})
	return out, err
}

func fileNames(f *ast.File) []string {
	var names []string
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv == nil {
				names = append(names, d.Name.Name)
				continue
			}
			recv := recvName(d.Recv.List[0].Type)
			if ast.IsExported(recv) {
				names = append(names, recv+"."+d.Name.Name)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							names = append(names, n.Name)
						}
					}
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						continue
					}
					names = append(names, s.Name.Name)
					names = append(names, memberNames(s.Name.Name, s.Type)...)
				}
			}
		}
	}
	return names
}

func memberNames(typ string, t ast.Expr) []string {
	var names []string
	var list *ast.FieldList
	switch x := t.(type) {
	case *ast.StructType:
		list = x.Fields
	case *ast.InterfaceType:
		list = x.Methods
	default:
		return nil
	}
	for _, fld := range list.List {
		for _, n := range fld.Names {
			if n.IsExported() {
				names = append(names, typ+"."+n.Name)
			}
		}
	}
	return names
}

func recvName(t ast.Expr) string {
	switch x := t.(type) {
	case *ast.StarExpr:
		return recvName(x.X)
	case *ast.IndexExpr:
		return recvName(x.X)
	case *ast.IndexListExpr:
		return recvName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return ""
}

// Methods returns the number of methods, exported or not, declared in the
// non-test files of the package in dir on the named receiver type.
func Methods(dir, typ string) (int, error) {
	pkg, err := build.Default.ImportDir(dir, 0)
	if err != nil {
		return 0, err
	}
	n := 0
	fset := token.NewFileSet()
	for _, f := range pkg.GoFiles {
		file, err := parser.ParseFile(fset, filepath.Join(dir, f), nil, parser.SkipObjectResolution)
		if err != nil {
			return 0, err
		}
		for _, decl := range file.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && fd.Recv != nil && recvName(fd.Recv.List[0].Type) == typ {
				n++
			}
		}
	}
	return n, nil
}
