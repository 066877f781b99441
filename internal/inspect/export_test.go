package inspect

import "github.com/blackboardkernel/bk/store"

// WithStore runs Main on s instead of the store its flags name: a test's
// memstore, which no flag can name.
func WithStore(s store.Store) Option { return func(e *env) { e.given = s } }
