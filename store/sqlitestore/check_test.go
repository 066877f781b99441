package sqlitestore

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// damaged returns a store file whose pages after the first hold garbage,
// and a file that begins as an SQLite database and goes on as garbage.
func damaged(t *testing.T) (store, junk string) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	store = filepath.Join(dir, "damaged.db")
	s, err := Open(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	// Enough rows for the file to span many pages.
	if _, err := s.db.ExecContext(ctx, "CREATE TABLE filler(x BLOB); INSERT INTO filler WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 400) SELECT randomblob(200) FROM n"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(store)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 16*4096 {
		t.Fatalf("file of %d bytes: too small to damage", len(b))
	}
	for i := 4096; i < len(b); i++ {
		b[i] = 0xA5
	}
	if err := os.WriteFile(store, b, 0o644); err != nil {
		t.Fatal(err)
	}
	junk = filepath.Join(dir, "junk.db")
	if err := os.WriteFile(junk, []byte("SQLite format 3\x00"+rand.Text()+rand.Text()+rand.Text()), 0o644); err != nil {
		t.Fatal(err)
	}
	return store, junk
}

// TestCheckRefusesDamage: with WithCheck, Open and OpenReadOnly refuse a
// damaged file and a file of garbage with ErrCorrupt, and Open leaves the
// file's bytes as they were; an intact store and a new file pass.
func TestCheckRefusesDamage(t *testing.T) {
	ctx := context.Background()
	store, junk := damaged(t)
	for _, path := range []string{store, junk} {
		before, _ := os.ReadFile(path)
		if s, err := Open(ctx, path, WithCheck()); !errors.Is(err, ErrCorrupt) {
			if s != nil {
				s.Close()
			}
			t.Errorf("Open(%s, WithCheck): %v, want ErrCorrupt", filepath.Base(path), err)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
			t.Errorf("Open(%s, WithCheck) changed the file", filepath.Base(path))
		}
		if s, err := OpenReadOnly(ctx, path, WithCheck()); !errors.Is(err, ErrCorrupt) {
			if s != nil {
				s.Close()
			}
			t.Errorf("OpenReadOnly(%s, WithCheck): %v, want ErrCorrupt", filepath.Base(path), err)
		}
	}
	text := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(text, []byte("hello, this is not a database at all\n"), 0o644)
	if s, err := OpenReadOnly(ctx, text, WithCheck()); !errors.Is(err, ErrNotAStore) || errors.Is(err, ErrCorrupt) {
		if s != nil {
			s.Close()
		}
		t.Errorf("OpenReadOnly(notes.txt, WithCheck): %v, want ErrNotAStore", err)
	}
	fresh := filepath.Join(t.TempDir(), "fresh.db")
	s, err := Open(ctx, fresh, WithCheck())
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = OpenReadOnly(ctx, fresh, WithCheck())
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}
