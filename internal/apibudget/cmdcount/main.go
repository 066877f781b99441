// Command cmdcount prints the exported names of the module's library
// packages: with one argument (the module root) a count per package and the
// totals, with two (the root and a package directory) that package's names,
// one per line.
//
//	go run ./internal/apibudget/cmdcount .
//	go run ./internal/apibudget/cmdcount . toolgate
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/blackboardkernel/bk/internal/apibudget"
)

func main() {
	if len(os.Args) < 2 || len(os.Args) > 3 {
		fmt.Fprintln(os.Stderr, "usage: cmdcount ROOT [PACKAGE-DIR]")
		os.Exit(2)
	}
	root := os.Args[1]
	m, err := apibudget.Names(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if len(os.Args) == 3 {
		for _, s := range m[os.Args[2]] {
			fmt.Println(s)
		}
		return
	}
	dirs := make([]string, 0, len(m))
	for d := range m {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	lib, support := 0, 0
	for _, d := range dirs {
		n := len(m[d])
		if apibudget.TestSupport(d) {
			support += n
		} else {
			lib += n
		}
		fmt.Printf("%-32s %5d\n", d, n)
	}
	gm, err := apibudget.Methods(filepath.Join(root, "toolgate"), "Gate")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("library %d, test-support %d, methods on *toolgate.Gate %d\n", lib, support, gm)
}
