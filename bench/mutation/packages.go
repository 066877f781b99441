//go:build bkmutate

package main

// The packages that register mutation switches, imported for their
// registrations: a switch the runner does not link is a check nobody
// tests. TestEveryPackageLinked checks this list against the tree.
import (
	_ "github.com/blackboardkernel/bk/adaptive"
	_ "github.com/blackboardkernel/bk/audit"
	_ "github.com/blackboardkernel/bk/budget"
	_ "github.com/blackboardkernel/bk/inspect/console"
	_ "github.com/blackboardkernel/bk/internal/inspect"
	_ "github.com/blackboardkernel/bk/invariant"
	_ "github.com/blackboardkernel/bk/kernel"
	_ "github.com/blackboardkernel/bk/mask"
	_ "github.com/blackboardkernel/bk/pack"
	_ "github.com/blackboardkernel/bk/replay"
	_ "github.com/blackboardkernel/bk/rules"
	_ "github.com/blackboardkernel/bk/store/pgstore"
	_ "github.com/blackboardkernel/bk/store/sqlitestore"
	_ "github.com/blackboardkernel/bk/toolgate"
	_ "github.com/blackboardkernel/bk/worker/llm"
)
