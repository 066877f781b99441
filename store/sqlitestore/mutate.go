//go:build bkmutate

package sqlitestore

import "github.com/blackboardkernel/bk/internal/mutant"

// The store's mutation switches (see internal/mutant).
var (
	mutReadOnlyFiles bool
	mutCancelError   bool
	mutNoCheck       bool
)

func init() {
	mutant.Register("github.com/blackboardkernel/bk/store/sqlitestore",
		mutant.Def{Name: "sqlitestore.readonly_files", Check: "a read-only open of a cleanly closed database leaves no -wal or -shm file behind", On: &mutReadOnlyFiles,
			Also: []string{"github.com/blackboardkernel/bk/internal/inspect"}},
		mutant.Def{Name: "sqlitestore.cancel_error", Check: "a call whose context is done returns the context's error, not the driver's", On: &mutCancelError},
		mutant.Def{Name: "sqlitestore.check", Check: "WithCheck refuses a damaged database file with ErrCorrupt before anything writes to it", On: &mutNoCheck,
			Also: []string{"github.com/blackboardkernel/bk/internal/inspect"}},
	)
}
