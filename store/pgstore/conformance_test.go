package pgstore_test

import (
	"testing"

	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/store/internal/pgtest"
	"github.com/blackboardkernel/bk/store/storetest"
)

func TestStoreConformance(t *testing.T) {
	pgtest.DSN(t)
	storetest.Run(t, func(t *testing.T) kernel.Store { return newStore(t) })
}
