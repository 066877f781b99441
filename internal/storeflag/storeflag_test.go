package storeflag

import (
	"path/filepath"
	"testing"
)

func TestResolve(t *testing.T) {
	for _, c := range []struct {
		store, db, dsn, want string
		ok                   bool
	}{
		{"", "", "", Memory, true},
		{"", "f.db", "", SQLite, true},
		{"sqlite", "f.db", "", SQLite, true},
		{"postgres", "", "postgres://h/db", Postgres, true},
		{"memory", "", "", Memory, true},
		{"mongo", "", "", "", false},
		{"sqlite", "", "", "", false},
		{"postgres", "", "", "", false},
		{"memory", "f.db", "", "", false},
		{"postgres", "f.db", "postgres://h/db", "", false},
		{"", "", "postgres://h/db", "", false},
	} {
		got, err := Resolve(c.store, c.db, c.dsn)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("Resolve(%q, %q, %q) = %q, %v", c.store, c.db, c.dsn, got, err)
		}
	}
}

func TestCheckDir(t *testing.T) {
	if err := CheckDir(""); err != nil {
		t.Error(err)
	}
	if err := CheckDir(filepath.Join(t.TempDir(), "x.db")); err != nil {
		t.Error(err)
	}
	if err := CheckDir("/nonexistent/dir/x.db"); err == nil {
		t.Error("a missing directory passed")
	}
}

func TestOne(t *testing.T) {
	for _, c := range []struct {
		db, dsn, want string
		ok            bool
	}{
		{"f.db", "", SQLite, true},
		{"", "postgres://h/db", Postgres, true},
		{"f.db", "postgres://h/db", "", false},
		{"", "", "", false},
	} {
		got, err := One(c.db, c.dsn)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("One(%q, %q) = %q, %v", c.db, c.dsn, got, err)
		}
	}
}
