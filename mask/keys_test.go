package mask

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
)

// openKeys opens a key directory in a fresh temporary directory.
func openKeys(t *testing.T) (*Keys, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "keys")
	k, err := OpenKeyDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	return k, dir
}

// remainingKeys is every key a keyring still keeps: in memory and in any
// file of its directory, read leniently (a tombstone that kept a key
// counts).
func remainingKeys(t *testing.T, k *Keys, dir string) [][]byte {
	t.Helper()
	var out [][]byte
	k.mu.Lock()
	for _, key := range k.keys {
		out = append(out, key)
	}
	k.mu.Unlock()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var f traceFile
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		if f.Key == "" {
			continue
		}
		key, err := base64.StdEncoding.DecodeString(f.Key)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, key)
	}
	return out
}

// dirNames is the names of dir's entries.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// A key directory is 0700, its trace files 0600 and named by a hash of
// the trace id alone; it refuses a directory others may reach and a
// damaged trace file; a write that fails gives no key, erases nothing and
// leaves no file; an erasure leaves no key in any file and holds after
// reopening, and erasing twice or a trace never keyed is no error.
func TestKeyDir(t *testing.T) {
	ctx := context.Background()
	k, dir := openKeys(t)
	if info, err := os.Stat(dir); err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("new key directory: %v %v, want mode 0700", info, err)
	}
	a, err := k.Key(ctx, "", "trace-a")
	if err != nil || len(a) != MinKey {
		t.Fatalf("Key: %d bytes, %v", len(a), err)
	}
	if again, _ := k.Key(ctx, "", "trace-a"); !hmac.Equal(a, again) {
		t.Error("a trace's key changed")
	}
	if b, _ := k.Key(ctx, "", "trace-b"); hmac.Equal(a, b) {
		t.Error("two traces share a key")
	}
	names := dirNames(t, dir)
	if len(names) != 2 {
		t.Fatalf("directory holds %v, want a file per trace", names)
	}
	for _, name := range names {
		if strings.Contains(name, "trace") || !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(name) {
			t.Errorf("trace file name %q: want the hex SHA-256 of the id alone", name)
		}
		if info, _ := os.Stat(filepath.Join(dir, name)); info.Mode().Perm() != 0o600 {
			t.Errorf("trace file %s has mode %#o", name, info.Mode().Perm())
		}
	}
	if _, err := k.Key(ctx, "", ""); !errors.Is(err, blackboard.ErrInvalidInput) {
		t.Errorf("empty trace: %v, want blackboard.ErrInvalidInput", err)
	}
	if err := k.Erase(ctx, "", ""); !errors.Is(err, blackboard.ErrInvalidInput) {
		t.Errorf("erasing an empty trace: %v, want blackboard.ErrInvalidInput", err)
	}

	// Writes that fail: the link of a first key, the rename of a tombstone.
	failed := errors.New("disk full")
	keyDirLink = func(string, string) error { return failed }
	keyDirRename = func(string, string) error { return failed }
	t.Cleanup(func() { keyDirLink, keyDirRename = os.Link, os.Rename })
	if _, err := k.Key(ctx, "", "trace-c"); !errors.Is(err, failed) {
		t.Errorf("a new key that cannot be kept: %v, want the write's error", err)
	}
	if err := k.Erase(ctx, "", "trace-a"); !errors.Is(err, failed) {
		t.Errorf("an erasure that cannot be written: %v, want the write's error", err)
	}
	keyDirLink, keyDirRename = os.Link, os.Rename
	if again, err := k.Key(ctx, "", "trace-a"); err != nil || !hmac.Equal(a, again) {
		t.Errorf("a failed erasure changed the key: %v", err)
	}
	if got := dirNames(t, dir); !slices.Equal(got, names) {
		t.Errorf("failed writes left %v, want %v", got, names)
	}

	if err := k.Erase(ctx, "", "trace-a"); err != nil {
		t.Fatal(err)
	}
	if err := k.Erase(ctx, "", "trace-a"); err != nil {
		t.Errorf("erasing twice: %v", err)
	}
	if err := k.Erase(ctx, "", "never-keyed"); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Key(ctx, "", "trace-a"); !errors.Is(err, ErrErased) {
		t.Errorf("Key of an erased trace: %v, want ErrErased", err)
	}
	for _, key := range remainingKeys(t, k, dir) {
		if hmac.Equal(key, a) {
			t.Error("the erased key is still in a file of the directory")
		}
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Key(ctx, "", "trace-b"); !errors.Is(err, blackboard.ErrClosed) {
		t.Errorf("Key after Close: %v, want ErrClosed", err)
	}
	if err := k.Erase(ctx, "", "trace-b"); !errors.Is(err, blackboard.ErrClosed) {
		t.Errorf("Erase after Close: %v, want ErrClosed", err)
	}

	k2, err := OpenKeyDir(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer k2.Close()
	for _, trace := range []string{"trace-a", "never-keyed"} {
		if _, err := k2.Key(ctx, "", trace); !errors.Is(err, ErrErased) {
			t.Errorf("%s after reopening: %v, want ErrErased", trace, err)
		}
	}
	b, err := k2.Key(ctx, "", "trace-b")
	if err != nil {
		t.Fatal(err)
	}

	// Damaged trace files are refused, never replaced by a new key.
	bpath := filepath.Join(dir, mustKeyName(t, "trace-b"))
	for _, body := range []string{`{"version":1,"key":"c2hvcnQ="}`, `{"version":2,"key":"` + base64.StdEncoding.EncodeToString(b) + `"}`, `not json`, ``,
		`{"version":1,"key":"` + base64.StdEncoding.EncodeToString(b) + `","erased":true}`, `{"version":1}`, `{"version":1,"key":"!!"}`,
		`{"version":1,"key":"` + base64.StdEncoding.EncodeToString(b) + `","trace":"trace-b"}`} {
		if err := os.WriteFile(bpath, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := k2.Key(ctx, "", "trace-b"); !errors.Is(err, blackboard.ErrInvalidInput) {
			t.Errorf("trace file %s: %v, want blackboard.ErrInvalidInput", body, err)
		}
		if got, _ := os.ReadFile(bpath); string(got) != body {
			t.Errorf("a damaged trace file was rewritten: %s", got)
		}
	}
	if err := os.WriteFile(bpath, []byte(`{"version":1,"key":"`+base64.StdEncoding.EncodeToString(b)+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(bpath, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := k2.Key(ctx, "", "trace-b"); !errors.Is(err, blackboard.ErrInvalidInput) {
		t.Errorf("a trace file others may read: %v, want blackboard.ErrInvalidInput", err)
	}

	// The directory itself: modes, a file in its place, an empty path.
	if err := os.Chmod(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenKeyDir(ctx, dir); !errors.Is(err, blackboard.ErrInvalidInput) {
		t.Errorf("a key directory others may reach: %v, want blackboard.ErrInvalidInput", err)
	}
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenKeyDir(ctx, notDir); !errors.Is(err, blackboard.ErrInvalidInput) {
		t.Errorf("a file as the key directory: %v, want blackboard.ErrInvalidInput", err)
	}
	if _, err := OpenKeyDir(ctx, ""); !errors.Is(err, blackboard.ErrInvalidInput) {
		t.Errorf("an empty path: %v, want blackboard.ErrInvalidInput", err)
	}
	if _, err := OpenKeyDir(ctx, filepath.Join(t.TempDir(), "no", "parent")); err == nil {
		t.Error("a key directory without its parent was made")
	}
}

// Two Keys on one directory (two processes) racing for one trace's first
// key end with one key that both use; an erasure through one holds in
// the other at its next call, and a racing first key never lands over
// the tombstone (by chance, with goroutines, and by design, with the
// other Keys acting just before the link).
func TestKeyDirShared(t *testing.T) {
	ctx := context.Background()
	k1, dir := openKeys(t)
	k2, err := OpenKeyDir(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer k2.Close()
	for round := range 20 {
		trace := fmt.Sprintf("race-%d", round)
		var wg sync.WaitGroup
		got := make([][]byte, 8)
		for i := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ring := k1
				if i%2 == 1 {
					ring = k2
				}
				key, err := ring.Key(ctx, "", trace)
				if err != nil {
					t.Error(err)
				}
				got[i] = key
			}()
		}
		wg.Wait()
		for _, key := range got[1:] {
			if !hmac.Equal(key, got[0]) {
				t.Fatalf("%s: racing first uses got different keys", trace)
			}
		}
		if again, _ := k1.Key(ctx, "", trace); !hmac.Equal(again, got[0]) {
			t.Fatalf("%s: the kept key is not the one given", trace)
		}
	}

	// The other Keys acts between this one's read and its link: it lands
	// its key first, which both then use, or its tombstone, which stays.
	t.Cleanup(func() { keyDirLink = os.Link })
	var other []byte
	keyDirLink = func(tmp, path string) error {
		keyDirLink = os.Link
		var err error
		if other, err = k2.Key(ctx, "", "late"); err != nil {
			t.Error(err)
		}
		return os.Link(tmp, path)
	}
	if mine, err := k1.Key(ctx, "", "late"); err != nil || !hmac.Equal(mine, other) {
		t.Errorf("a first key lost to another Keys: %v, want the other's key", err)
	}
	keyDirLink = func(tmp, path string) error {
		keyDirLink = os.Link
		if err := k2.Erase(ctx, "", "late-erased"); err != nil {
			t.Error(err)
		}
		return os.Link(tmp, path)
	}
	if _, err := k1.Key(ctx, "", "late-erased"); !errors.Is(err, ErrErased) {
		t.Errorf("a first key racing an erasure: %v, want ErrErased", err)
	}
	if _, err := k2.Key(ctx, "", "late-erased"); !errors.Is(err, ErrErased) {
		t.Errorf("the tombstone after a racing first key: %v, want ErrErased", err)
	}

	if _, err := k2.Key(ctx, "", "shared"); err != nil {
		t.Fatal(err)
	}
	if err := k1.Erase(ctx, "", "shared"); err != nil {
		t.Fatal(err)
	}
	if _, err := k2.Key(ctx, "", "shared"); !errors.Is(err, ErrErased) {
		t.Errorf("the other Keys after the erasure: %v, want ErrErased", err)
	}

	// An erasure racing first uses: once it is done, no Keys has a key.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ring := k1
			if i%2 == 1 {
				ring = k2
			}
			if i == 0 {
				if err := ring.Erase(ctx, "", "contested"); err != nil {
					t.Error(err)
				}
				return
			}
			if _, err := ring.Key(ctx, "", "contested"); err != nil && !errors.Is(err, ErrErased) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for _, ring := range []*Keys{k1, k2} {
		if _, err := ring.Key(ctx, "", "contested"); !errors.Is(err, ErrErased) {
			t.Errorf("after an erasure racing first uses: %v, want ErrErased", err)
		}
	}
	for _, name := range dirNames(t, dir) {
		if strings.HasPrefix(name, ".tmp-") {
			t.Errorf("left behind: %s", name)
		}
	}
}

// Concurrent first uses of one trace get one key, in memory and in a
// directory; the ring serves many traces at once.
func TestKeysConcurrent(t *testing.T) {
	ctx := context.Background()
	dirRing, _ := openKeys(t)
	for name, k := range map[string]*Keys{"memory": NewKeys(), "directory": dirRing} {
		var wg sync.WaitGroup
		got := make([][]byte, 16)
		for i := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				key, err := k.Key(ctx, "", "shared")
				if err != nil {
					t.Error(err)
				}
				got[i] = key
				if _, err := k.Key(ctx, "", fmt.Sprintf("own-%d", i)); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		for _, key := range got[1:] {
			if !hmac.Equal(key, got[0]) {
				t.Fatalf("%s: concurrent first uses got different keys", name)
			}
		}
	}
}

// TestKeyNamesPerNamespace: a default-namespace trace's key keeps the
// name it had before keys were per namespace (the hex SHA-256 of the bare
// trace id), "" and the default namespace's name are one namespace, and
// no trace id, not one spelled as another namespace's pair, names another
// namespace's key.
func TestKeyNamesPerNamespace(t *testing.T) {
	ctx := context.Background()
	k, dir := openKeys(t)
	legacy := sha256.Sum256([]byte("T1"))
	if name := mustKeyName(t, "T1"); name != hex.EncodeToString(legacy[:]) {
		t.Fatalf("the default namespace's T1 is named %s, want the hash of the bare id", name)
	}
	plain, err := k.Key(ctx, "", "T1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, hex.EncodeToString(legacy[:]))); err != nil {
		t.Errorf("the default namespace's T1 is not in its old file: %v", err)
	}
	if named, err := k.Key(ctx, blackboard.DefaultNamespace, "T1"); err != nil || !hmac.Equal(named, plain) {
		t.Errorf("T1 in %q and in \"\": %v, want one key", blackboard.DefaultNamespace, err)
	}
	billing, err := k.Key(ctx, "billing", "T1")
	if err != nil {
		t.Fatal(err)
	}
	spelled, err := k.Key(ctx, "", `["billing","T1"]`)
	if err != nil {
		t.Fatal(err)
	}
	if hmac.Equal(billing, plain) || hmac.Equal(billing, spelled) {
		t.Error("billing's T1 shares a key with a default-namespace trace")
	}
	if _, err := k.Key(ctx, "bad\nnamespace", "T1"); !errors.Is(err, blackboard.ErrInvalidInput) {
		t.Errorf("a namespace with a control character: %v, want blackboard.ErrInvalidInput", err)
	}
	if err := k.Erase(ctx, "billing", "T1"); err != nil {
		t.Fatal(err)
	}
	if again, err := k.Key(ctx, "", "T1"); err != nil || !hmac.Equal(again, plain) {
		t.Errorf("the default namespace's T1 after billing's T1 was erased: %v, want its key", err)
	}
	mem := NewKeys()
	a, _ := mem.Key(ctx, "desk", "T1")
	if err := mem.Erase(ctx, "billing", "T1"); err != nil {
		t.Fatal(err)
	}
	if again, err := mem.Key(ctx, "desk", "T1"); err != nil || !hmac.Equal(again, a) {
		t.Errorf("desk's T1 in memory after billing's T1 was erased: %v, want its key", err)
	}
}
