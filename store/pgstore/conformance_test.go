package pgstore_test

import (
	"github.com/jackc/pgx/v5/pgxpool"

	"testing"

	"github.com/blackboardkernel/bk/internal/pgtest"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/storetest"
)

func TestStoreConformance(t *testing.T) {
	pgtest.DSN(t)
	storetest.Run(t, func(t *testing.T) store.Store { return newStore(t) })
}

// TestStoreConformanceSerializable runs the suite on connections whose
// transactions are SERIALIZABLE, as on a server configured that way or a
// distributed PostgreSQL-compatible database: the concurrent cases then
// meet serialization failures, which the store runs again.
func TestStoreConformanceSerializable(t *testing.T) {
	pool := pgtest.PoolWith(t, func(c *pgxpool.Config) {
		c.MaxConns = 16
		c.ConnConfig.RuntimeParams["default_transaction_isolation"] = "serializable"
	})
	storetest.Run(t, func(t *testing.T) store.Store { return storeIn(t, pool, pgtest.Schema(t)) })
}
