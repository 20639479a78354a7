package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// Migration is one numbered change of a component's schema. Versions
// start at 1 and follow each other without gaps; a migration, once
// released, is never edited: a later change is a new migration.
//
// Each migration has a form per dialect, and one version number on both:
// Up for SQLite, Postgres for PostgreSQL. SQLite databases exist from
// every release, so its forms replay the schema's whole history (tables
// rebuilt, columns added). PostgreSQL came later, with no old databases to
// bring forward: its version 1 creates each component's tables as they
// were at the version PostgreSQL arrived (catalog 2, runs 6, agent 1), the
// versions up to that one are AlreadyInBaseline there, and every later
// migration has a real form in both dialects. A migration without a
// Postgres form cannot be applied to PostgreSQL: Migrate refuses it rather
// than skip it silently.
type Migration struct {
	Version int
	Name    string
	// Up applies the change to SQLite inside the transaction that records
	// it, so a migration is applied whole or not at all.
	Up func(ctx context.Context, tx bun.Tx) error
	// Postgres applies the change to PostgreSQL, as Up does to SQLite.
	Postgres func(ctx context.Context, tx bun.Tx) error
}

// AlreadyInBaseline is the PostgreSQL form of a migration whose change the
// PostgreSQL baseline (version 1) already made: it does nothing.
func AlreadyInBaseline(context.Context, bun.Tx) error { return nil }

// up returns the form of m for db's dialect.
func (m Migration) up(db bun.IDB) func(context.Context, bun.Tx) error {
	if IsPG(db) {
		return m.Postgres
	}
	return m.Up
}

// ErrSchemaTooNew is returned by Migrate when the database was migrated by
// a newer Gauntlet than this one: its data may not be understood, so it is
// not touched.
var ErrSchemaTooNew = errors.New("the database was written by a newer Gauntlet")

const migrationsDDL = `CREATE TABLE IF NOT EXISTS "schema_migrations" (
	"component" VARCHAR NOT NULL,
	"version" INTEGER NOT NULL,
	"name" VARCHAR NOT NULL,
	"applied_at" VARCHAR NOT NULL,
	PRIMARY KEY ("component", "version"))`

// Migrate brings a component's tables (the catalog's cache, runs, agents)
// to the newest version in ms, applying in order, each in its own
// transaction, the migrations the database has not recorded in its
// schema_migrations table. A database made before migrations existed has
// the tables of version 1 and no record: version 1 creates its tables
// only if they are missing, so it is recorded without touching them.
func Migrate(ctx context.Context, db *bun.DB, component string, ms []Migration) error {
	for i, m := range ms {
		if m.Version != i+1 {
			return fmt.Errorf("migrate %s: migration %q has version %d, want %d", component, m.Name, m.Version, i+1)
		}
		if m.up(db) == nil {
			return fmt.Errorf("migrate %s: migration %d (%s) has no %s form", component, m.Version, m.Name, db.Dialect().Name())
		}
	}
	if err := createMigrationsTable(ctx, db); err != nil {
		return fmt.Errorf("migrate %s: %w", component, err)
	}
	for {
		done, err := migrateOne(ctx, db, component, ms)
		if err != nil || done {
			return err
		}
	}
}

// migrateOne applies the next migration the database lacks, reading the
// version inside the transaction so that two processes opening the same
// database never apply one migration twice. It reports done when there
// was none left.
func migrateOne(ctx context.Context, db *bun.DB, component string, ms []Migration) (done bool, err error) {
	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := LockTx(ctx, tx, "schema_migrations"); err != nil {
			return err
		}
		v, err := version(ctx, tx, component)
		if err != nil {
			return err
		}
		if v > len(ms) {
			return fmt.Errorf("%w: its %s schema is at version %d, this Gauntlet knows versions up to %d; upgrade Gauntlet",
				ErrSchemaTooNew, component, v, len(ms))
		}
		if v == len(ms) {
			done = true
			return nil
		}
		m := ms[v]
		if err := m.up(tx)(ctx, tx); err != nil {
			return fmt.Errorf("migration %d (%s): %w", m.Version, m.Name, err)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO "schema_migrations" ("component", "version", "name", "applied_at") VALUES (?, ?, ?, ?)`,
			component, m.Version, m.Name, time.Now().UTC().Format(time.RFC3339))
		return err
	})
	if err != nil {
		return false, fmt.Errorf("migrate %s: %w", component, err)
	}
	return done, nil
}

// Version returns the schema version of a component recorded in a
// database: 0 when none was applied.
func Version(ctx context.Context, db *bun.DB, component string) (int, error) {
	if err := createMigrationsTable(ctx, db); err != nil {
		return 0, err
	}
	return version(ctx, db, component)
}

// createMigrationsTable creates the schema_migrations table if missing.
// On PostgreSQL two processes doing so at once could collide on the
// catalog's unique names: the lock keeps them apart.
func createMigrationsTable(ctx context.Context, db *bun.DB) error {
	return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := LockTx(ctx, tx, "schema_migrations"); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, migrationsDDL)
		return err
	})
}

func version(ctx context.Context, db bun.IDB, component string) (int, error) {
	var v sql.NullInt64
	err := db.QueryRowContext(ctx, `SELECT MAX("version") FROM "schema_migrations" WHERE "component" = ?`, component).Scan(&v)
	if err != nil {
		return 0, err
	}
	return int(v.Int64), nil
}

// ExecAll runs statements in order, stopping at the first that fails:
// the body of most migrations.
func ExecAll(ctx context.Context, tx bun.Tx, stmts ...string) error {
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%w\n%s", err, s)
		}
	}
	return nil
}

// HasTable reports whether the database has a table of that name.
func HasTable(ctx context.Context, db bun.IDB, name string) (bool, error) {
	q := `SELECT COUNT(*) FROM "sqlite_master" WHERE "type" = 'table' AND "name" = ?`
	if db.Dialect().Name() == dialect.PG {
		q = `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ?`
	}
	var n int
	if err := db.QueryRowContext(ctx, q, name).Scan(&n); err != nil {
		return false, err
	}
	return n > 0, nil
}
