package main

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/blackboardkernel/bk/internal/apibudget"
)

func main() {
	root := os.Args[1]
	m, err := apibudget.Names(root)
	if err != nil {
		panic(err)
	}
	var dirs []string
	for d := range m {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	lib, ts := 0, 0
	for _, d := range dirs {
		n := len(m[d])
		if apibudget.TestSupport(d) {
			ts += n
		} else {
			lib += n
		}
		gm := 0
		for _, s := range m[d] {
			if strings.HasPrefix(s, "Gate.") {
				gm++
			}
		}
		fmt.Printf("%-32s %5d  Gate.*=%d\n", d, n, gm)
	}
	fmt.Println("library", lib, "test-support", ts, "total", lib+ts)
}

func init() {
	if len(os.Args) > 2 {
		m, _ := apibudget.Names(os.Args[1])
		for _, s := range m[os.Args[2]] {
			fmt.Println(s)
		}
		os.Exit(0)
	}
}
