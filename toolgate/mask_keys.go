package toolgate

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// The keyring's sentinels, beside those of codes.go.
var (
	// ErrMaskErased: the trace's mask key was erased ([Keys.Erase]); a
	// call in it fails closed and writes nothing, and its stored hashes
	// match no value anyone can compute.
	ErrMaskErased = errors.New("toolgate: the trace's mask key is erased")
	// ErrKeyFileBusy: another [Keys] (in this process or another) holds
	// the key file open; only one may, so that none undoes another's
	// erasure by writing the file from its own copy.
	ErrKeyFileBusy = errors.New("toolgate: the key file is open elsewhere")
)

// keyFileVersion is the version of the key file's shape.
const keyFileVersion = 1

// keyFile is the key file's shape: each trace's key (base64), and the
// traces whose keys were erased, sorted, so that none gets a new one.
type keyFile struct {
	Version int               `json:"version"`
	Keys    map[string]string `json:"keys"`
	Erased  []string          `json:"erased"`
}

// Keys is a [Keyring]: a random key of [MinMaskKey] bytes per trace, made
// on the trace's first use, and erasable one trace at a time. [NewKeys]
// keeps them in memory only (a process's lifetime: tests, or values that
// must not outlive the process); [OpenKeyFile] keeps them in a file,
// which must stay apart from the store and out of the inspector's reach.
// An erased trace is remembered, so that it never gets a key again.
// Every method may be called concurrently.
type Keys struct {
	mu     sync.Mutex
	keys   map[string][]byte
	erased map[string]bool
	path   string // the key file; "" in memory
	unlock func() error
	closed bool
}

// NewKeys returns a keyring that keeps its keys in memory only.
func NewKeys() *Keys {
	return &Keys{keys: map[string][]byte{}, erased: map[string]bool{}}
}

// OpenKeyFile opens the keyring kept in the file at path, creating the
// file (mode 0600) when it does not exist. It refuses a file that group
// or others may read or write, or that is not a key file, with
// [ErrInvalidConfig], and a file another Keys holds open with
// [ErrKeyFileBusy]; a lock file beside it (path + ".lock") says who holds
// it, and is released by [Keys.Close] or by the process's end. Every
// change (a trace's first key, an erasure) rewrites the whole file: a
// temporary file in the same directory, synced, then renamed over it, so
// that the file is at every moment the old ring or the new one, never
// part of either. The cost of a change grows with the number of traces.
func OpenKeyFile(ctx context.Context, path string) (*Keys, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if path == "" {
		return nil, fmt.Errorf("%w: key file: empty path", ErrInvalidConfig)
	}
	unlock, err := lockFile(path + ".lock")
	if err != nil {
		return nil, err
	}
	k := NewKeys()
	k.path, k.unlock = path, unlock
	switch err := k.load(); {
	case errors.Is(err, fs.ErrNotExist):
		if err := k.write(k.keys, k.erased); err != nil {
			unlock()
			return nil, err
		}
	case err != nil:
		unlock()
		return nil, err
	}
	return k, nil
}

// load reads the key file into k.
func (k *Keys) load() error {
	info, err := os.Stat(k.path)
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%w: key file %s is not a regular file", ErrInvalidConfig, k.path)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%w: key file %s has mode %#o: group or others may read it (want 0600)", ErrInvalidConfig, k.path, perm)
	}
	b, err := os.ReadFile(k.path)
	if err != nil {
		return err
	}
	var f keyFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil || f.Version != keyFileVersion {
		return fmt.Errorf("%w: %s is not a key file of version %d (%v)", ErrInvalidConfig, k.path, keyFileVersion, err)
	}
	for trace, s := range f.Keys {
		key, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(key) < MinMaskKey || checkTrace(trace) != nil {
			return fmt.Errorf("%w: key file %s: a bad key for trace %q", ErrInvalidConfig, k.path, trace)
		}
		k.keys[trace] = key
	}
	for _, trace := range f.Erased {
		if _, has := k.keys[trace]; has || checkTrace(trace) != nil {
			return fmt.Errorf("%w: key file %s: trace %q is erased and keyed, or not a trace id", ErrInvalidConfig, k.path, trace)
		}
		k.erased[trace] = true
	}
	return nil
}

// write replaces the key file with keys and erased; in memory, nothing.
// On an error the file is as it was and no temporary file is left.
func (k *Keys) write(keys map[string][]byte, erased map[string]bool) (err error) {
	if k.path == "" {
		return nil
	}
	f := keyFile{Version: keyFileVersion, Keys: make(map[string]string, len(keys)), Erased: slices.Sorted(maps.Keys(erased))}
	for trace, key := range keys {
		f.Keys[trace] = base64.StdEncoding.EncodeToString(key)
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(k.path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(k.path)+".*")
	if err != nil {
		return fmt.Errorf("key file: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	// CreateTemp makes the file 0600; Chmod says so whatever the umask.
	if err = tmp.Chmod(0o600); err != nil {
		return fmt.Errorf("key file: %w", err)
	}
	if _, err = tmp.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("key file: %w", err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("key file: %w", err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("key file: %w", err)
	}
	if err = os.Rename(tmp.Name(), k.path); err != nil {
		return fmt.Errorf("key file: %w", err)
	}
	// The rename is durable once the directory is synced: an erasure
	// that a crash could undo would not be one.
	if d, derr := os.Open(dir); derr == nil {
		derr = d.Sync()
		d.Close()
		if derr != nil {
			return fmt.Errorf("key file: sync %s: %w", dir, derr)
		}
	}
	return nil
}

// Key returns traceID's key, making a random one on the trace's first use
// (kept, in a file keyring, before Key returns). It returns an error
// wrapping [ErrMaskErased] for an erased trace, [ErrInvalidCall] for an
// id that is not a trace id, [ErrInvalidConfig] after [Keys.Close], and
// the file's error when a new key cannot be kept (no key is given then).
// The key returned is a copy.
func (k *Keys) Key(ctx context.Context, traceID string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkTrace(traceID); err != nil {
		return nil, fmt.Errorf("%w: trace id: %v", ErrInvalidCall, err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case k.closed:
		return nil, fmt.Errorf("%w: the keyring is closed", ErrInvalidConfig)
	case k.erased[traceID]:
		return nil, fmt.Errorf("%w: trace %q", ErrMaskErased, traceID)
	}
	if key, ok := k.keys[traceID]; ok {
		return slices.Clone(key), nil
	}
	key := make([]byte, MinMaskKey)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	k.keys[traceID] = key
	if err := k.write(k.keys, k.erased); err != nil {
		delete(k.keys, traceID)
		return nil, err
	}
	return slices.Clone(key), nil
}

// Erase destroys traceID's key, in a file keyring by rewriting the file
// without it, and remembers the trace as erased: afterwards the trace's
// stored hashes match no value anyone can compute, and [Keys.Key] answers
// [ErrMaskErased] for it. Other traces' keys are untouched, and nothing in
// the store changes. A trace that has no key yet is marked erased too;
// erasing twice is no error. On an error (the file cannot be rewritten)
// nothing is erased. Copies of the key made before Erase (backups of the
// file, a gate's call in flight) are beyond its reach.
func (k *Keys) Erase(ctx context.Context, traceID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkTrace(traceID); err != nil {
		return fmt.Errorf("%w: trace id: %v", ErrInvalidCall, err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return fmt.Errorf("%w: the keyring is closed", ErrInvalidConfig)
	}
	keys, erased := maps.Clone(k.keys), maps.Clone(k.erased)
	old := keys[traceID]
	if !mutMaskErase {
		delete(keys, traceID)
	}
	erased[traceID] = true
	if err := k.write(keys, erased); err != nil {
		return err
	}
	k.keys, k.erased = keys, erased
	if !mutMaskErase {
		clear(old) // the ring's own copy, which no map holds now
	}
	return nil
}

// Close releases the key file (its lock) and forgets the keys; the
// keyring then refuses every call. Closing twice is no error.
func (k *Keys) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return nil
	}
	k.closed = true
	for _, key := range k.keys {
		clear(key)
	}
	k.keys = nil
	if k.unlock != nil {
		return k.unlock()
	}
	return nil
}
