package sqlitestore_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/inspect"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/sqlitestore"
)

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// TestOpenReadOnly: a read-only store reads what a writer wrote, refuses
// every write and leaves the file as it was.
func TestOpenReadOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bk.db")
	w, err := sqlitestore.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	k, _ := kernel.New(kernel.Config{Store: w})
	id, err := k.Handle(blackboard.RoleTool, "t").Write(t.Context(), kernel.Entry{TraceID: "tr", Slot: blackboard.Percepts, Kind: "charge", Payload: blackboard.Payload{"stale": true}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	before := fileSum(t, path)

	ro, err := sqlitestore.OpenReadOnly(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ro.Get(t.Context(), id)
	if err != nil || got.Kind != "charge" {
		t.Fatalf("Get: %+v %v", got, err)
	}
	n := 0
	for ts, err := range ro.ListTraces(t.Context(), "") {
		if err != nil || ts.TraceID != "tr" || ts.Records != 1 {
			t.Errorf("ListTraces: %+v %v", ts, err)
		}
		n++
	}
	if n != 1 {
		t.Errorf("%d traces", n)
	}
	if st, err := ro.ReadState(t.Context(), "", "tr"); err != nil || st.Len != 1 || st.Version != 1 {
		t.Errorf("ReadState on a read-only store: %+v, %v; want one record, one change", st, err)
	}
	err = ro.Apply(t.Context(), store.Batch{Appends: []blackboard.Record{{ID: "percepts:tr:9"}}})
	if !errors.Is(err, blackboard.ErrPermission) {
		t.Errorf("an append on a read-only store: %v, want ErrPermission", err)
	}
	if err := ro.Apply(t.Context(), store.Batch{Invalidations: []store.Invalidation{{ID: id, Status: blackboard.StatusExpired, Reason: reason.TTLExpired}}}); !errors.Is(err, blackboard.ErrPermission) {
		t.Errorf("a status change on a read-only store: %v, want ErrPermission", err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if fileSum(t, path) != before {
		t.Error("a read-only open changed the database file")
	}
}

func TestOpenReadOnlyErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := sqlitestore.OpenReadOnly(context.Background(), filepath.Join(dir, "absent.db")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "absent.db")); !errors.Is(err, fs.ErrNotExist) {
		t.Error("a read-only open created the missing file")
	}
	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte("not a database, just some words of text\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlitestore.OpenReadOnly(context.Background(), text); !errors.Is(err, sqlitestore.ErrNotAStore) {
		t.Errorf("a text file: %v", err)
	}
	other := filepath.Join(dir, "other.db")
	db, err := sql.Open("sqlite", other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE songs (title TEXT)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := sqlitestore.OpenReadOnly(context.Background(), other); !errors.Is(err, sqlitestore.ErrNotAStore) {
		t.Errorf("another application's database: %v", err)
	}

	newer := filepath.Join(dir, "newer.db")
	s, err := sqlitestore.Open(context.Background(), newer)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	setVersion(t, newer, sqlitestore.SchemaVersion()+1)
	if _, err := sqlitestore.OpenReadOnly(context.Background(), newer); !errors.Is(err, sqlitestore.ErrSchemaTooNew) {
		t.Errorf("a newer schema: %v", err)
	}

	old := filepath.Join(dir, "v1.db")
	writeV1(t, old)
	_, err = sqlitestore.OpenReadOnly(context.Background(), old)
	if !errors.Is(err, sqlitestore.ErrSchemaTooOld) {
		t.Errorf("a version-1 database: %v", err)
	}
	if userVersion(t, old) != 1 {
		t.Error("a read-only open migrated the database")
	}
}

func setVersion(t *testing.T, path string, v int) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(fmt.Sprintf("PRAGMA user_version = %d", v)); err != nil {
		t.Fatal(err)
	}
}

// TestReadOnlyBesideAWriter: a reader lists traces and reads them while a
// writer keeps writing, and neither waits for the other to fail.
func TestReadOnlyBesideAWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bk.db")
	w, err := sqlitestore.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	k, _ := kernel.New(kernel.Config{Store: w})
	ctx := t.Context()
	if _, err := k.Handle(blackboard.RoleTool, "t").Write(ctx, kernel.Entry{TraceID: "t0", Slot: blackboard.Percepts, Kind: "charge"}); err != nil {
		t.Fatal(err)
	}
	ro, err := sqlitestore.OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 200 {
			if _, err := k.Handle(blackboard.RoleTool, "t").Write(context.Background(), kernel.Entry{TraceID: fmt.Sprintf("t%d", i%20), Slot: blackboard.Percepts, Kind: "charge"}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 50 {
		for ts, err := range store.ListTraces(ctx, ro, "") {
			if err != nil {
				t.Fatal(err)
			}
			if _, err := inspect.Timeline(ctx, ro, "", ts.TraceID); err != nil {
				t.Fatal(err)
			}
		}
	}
	wg.Wait()
}

// dirNames lists the names in dir.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestAttackReadOnlyLeavesNoFiles: reading a cleanly closed store
// read-only (what every bk command does) leaves the directory as it was:
// no -wal or -shm file beside the database, and the database file
// unchanged.
func TestAttackReadOnlyLeavesNoFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bk.db")
	w, err := sqlitestore.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	k, _ := kernel.New(kernel.Config{Store: w})
	for i := range 5 {
		if _, err := k.Handle(blackboard.RoleTool, "t").Write(t.Context(), kernel.Entry{TraceID: fmt.Sprintf("tr%d", i), Slot: blackboard.Percepts, Kind: "charge"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	before, sum := dirNames(t, dir), fileSum(t, path)
	if len(before) != 1 {
		t.Fatalf("a cleanly closed store left %v", before)
	}
	for range 2 {
		ro, err := sqlitestore.OpenReadOnly(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for ts, err := range store.ListTraces(t.Context(), ro, "") {
			if err != nil {
				t.Fatal(err)
			}
			if _, err := inspect.Timeline(t.Context(), ro, "", ts.TraceID); err != nil {
				t.Fatal(err)
			}
			n++
		}
		if err := ro.Apply(t.Context(), store.Batch{Appends: []blackboard.Record{{ID: "percepts:x:1"}}}); !errors.Is(err, blackboard.ErrPermission) {
			t.Errorf("an append: %v, want ErrPermission", err)
		}
		if err := ro.Close(); err != nil {
			t.Fatal(err)
		}
		if n != 5 {
			t.Errorf("%d traces read, want 5", n)
		}
		if after := dirNames(t, dir); len(after) != 1 {
			t.Fatalf("reading left %v beside the database", after)
		}
	}
	if fileSum(t, path) != sum {
		t.Error("reading changed the database file")
	}
}

// TestReadOnlyOpenedBeforeAWriter: a reader that opened a quiescent store
// does not block a writer that starts after it; it reads what the writer
// commits; the writer's close, while the reader holds the database,
// leaves the files to the reader's close, which removes them.
func TestReadOnlyOpenedBeforeAWriter(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bk.db")
	w, err := sqlitestore.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	ro, err := sqlitestore.OpenReadOnly(context.Background(), path, sqlitestore.WithBusyTimeout(0))
	if err != nil {
		t.Fatal(err)
	}
	count := func() int {
		n := 0
		for _, err := range store.ListTraces(t.Context(), ro, "") {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		return n
	}
	if count() != 0 {
		t.Fatal("traces in an empty store")
	}
	// The writer waits for no lock: a busy timeout of 0 would fail it.
	w, err = sqlitestore.Open(context.Background(), path, sqlitestore.WithBusyTimeout(0))
	if err != nil {
		t.Fatal(err)
	}
	k, _ := kernel.New(kernel.Config{Store: w})
	for i := range 20 {
		if _, err := k.Handle(blackboard.RoleTool, "t").Write(t.Context(), kernel.Entry{TraceID: fmt.Sprintf("tr%d", i), Slot: blackboard.Percepts, Kind: "charge"}); err != nil {
			t.Fatal(err)
		}
		if got := count(); got != i+1 {
			t.Fatalf("the reader sees %d traces, want %d", got, i+1)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Errorf("files left: %v", names)
	}
	ro, err = sqlitestore.OpenReadOnly(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if got := count(); got != 20 {
		t.Errorf("%d traces after both closed, want 20", got)
	}
}
