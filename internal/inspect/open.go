package inspect

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/cmdline"
	"github.com/blackboardkernel/bk/internal/storeflag"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/pgstore"
	"github.com/blackboardkernel/bk/store/sqlitestore"
)

// resolve picks the store from --db and --dsn, then $BK_DB and $BK_DSN:
// a flag wins over both variables, and exactly one store is named
// (bk.db when nothing is).
func (e *env) resolve() error {
	db, dsn := e.db, e.dsn
	if db == "" && dsn == "" {
		db, dsn = os.Getenv("BK_DB"), os.Getenv("BK_DSN")
		if db == "" && dsn == "" {
			db = "bk.db"
		}
	}
	kind, err := storeflag.One(db, dsn)
	if err != nil {
		return cmdline.Usagef("%v", err)
	}
	e.kind, e.db, e.dsn = kind, db, dsn
	return nil
}

// where names the store for a person, without the DSN's password.
func (e *env) where() string {
	if e.kind == storeflag.Postgres {
		if cfg, err := pgconn.ParseConfig(e.dsn); err == nil {
			return fmt.Sprintf("PostgreSQL %s:%d/%s", cfg.Host, cfg.Port, cfg.Database)
		}
		return "PostgreSQL"
	}
	return e.db
}

// open opens the store the command line names, read-only. SQLite is
// opened with [sqlitestore.OpenReadOnly] and checked whole. PostgreSQL
// is opened on a pool whose sessions default to read-only transactions:
// the server refuses any write, so bk neither creates nor migrates a
// schema (one that does not hold a store of this version is refused).
func (e *env) open(ctx context.Context) (store.Store, func() error, error) {
	if e.given != nil {
		return e.given, func() error { return nil }, nil
	}
	if e.kind != storeflag.Postgres {
		s, err := sqlitestore.OpenReadOnly(ctx, e.db, sqlitestore.WithCheck())
		if err != nil {
			return nil, nil, errors.New(describe(e.db, err))
		}
		return s, s.Close, nil
	}
	cfg, err := pgxpool.ParseConfig(e.dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("--dsn: %w: %v", blackboard.ErrInvalidInput, err)
	}
	pgstore.ConfigurePool(cfg)
	cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", e.where(), err)
	}
	s, err := pgstore.New(ctx, pool)
	if err != nil {
		pool.Close()
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "25006" { // read_only_sql_transaction: New tried to create or migrate
			return nil, nil, fmt.Errorf("%s: the schema holds no kernel store of this version (bk opens PostgreSQL read-only: it neither creates nor migrates one; run the application first): %w", e.where(), err)
		}
		if errors.Is(err, pgstore.ErrSchemaTooNew) {
			return nil, nil, fmt.Errorf("%s was written by a newer version of bk: install a newer bk: %w", e.where(), err)
		}
		return nil, nil, fmt.Errorf("%s: %w", e.where(), err)
	}
	return s, func() error { err := s.Close(); pool.Close(); return err }, nil
}

// openWritable opens the store for the one write bk makes, an approval,
// after [env.open] has found a store of this version there (so neither
// store migrates anything).
func (e *env) openWritable(ctx context.Context) (store.Store, func() error, error) {
	if e.kind == storeflag.Postgres {
		s, err := pgstore.Open(ctx, e.dsn)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", e.where(), err)
		}
		return s, s.Close, nil
	}
	s, err := sqlitestore.Open(ctx, e.db)
	if err != nil {
		return nil, nil, errors.New(describe(e.db, err))
	}
	return s, s.Close, nil
}
