package mask

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/ident"
)

// keyDirVersion is the version of a trace file's shape.
const keyDirVersion = 1

// maxTraceFile bounds what a trace file may hold: a key or a tombstone
// is under 100 bytes, and a larger file is damaged, not read whole.
const maxTraceFile = 4096

// traceFile is the shape of a trace's file in a key directory: its key
// (base64), or, once erased, a tombstone (Erased and no key), which keeps
// the trace from ever getting a key again. The trace id is not in it.
type traceFile struct {
	Version int    `json:"version"`
	Key     string `json:"key,omitempty"`
	Erased  bool   `json:"erased,omitempty"`
}

// The file operations a key directory's writes go through; tests make
// them fail to show that a failed write leaves nothing.
var (
	keyDirLink   = os.Link
	keyDirRename = os.Rename
)

// Keys is a [Keyring]: a random key of [MinKey] bytes per trace of
// each namespace (the same trace id in two namespaces has two keys), made
// on the trace's first use, and erasable one trace at a time. [NewKeys]
// keeps them in memory only (a process's lifetime: tests, or values that
// must not outlive the process); [OpenKeyDir] keeps them in a directory,
// a file per trace, which must stay apart from the store and out of the
// inspector's reach. An erased trace is remembered, so that it never gets
// a key again. Every method may be called concurrently, and several Keys
// (in one process or several) may share a directory, also for kernels
// of different namespaces.
type Keys struct {
	mu     sync.RWMutex      // Close takes it whole; a directory's calls share it
	keys   map[string][]byte // by keyName
	erased map[string]bool   // by keyName
	dir    string            // the key directory; "" in memory
	closed bool
}

// NewKeys returns a keyring that keeps its keys in memory only.
func NewKeys() *Keys {
	return &Keys{keys: map[string][]byte{}, erased: map[string]bool{}}
}

// OpenKeyDir opens the keyring kept in the directory dir, creating it
// (mode 0700, its parent must exist) when it does not exist. It refuses a
// path that is not a directory, or a directory that group or others may
// enter, read or write, with [blackboard.ErrInvalidInput].
//
// Each trace has one file there, named by [keyName] of its namespace and
// id (no trace or namespace text in a name), mode 0600, holding its key or, once erased, a
// tombstone. A call's cost does not grow with the number of traces: a
// trace's first key writes its own file only (a temporary file, synced,
// then hard-linked into place only if no file is there, the directory
// synced), an erasure replaces that file only, and a known trace's key is
// read from its file on every use, so the Keys keeps no key in memory
// and an erasure made through another Keys (another process, `bk erase`)
// holds from the next call. Two Keys racing for one trace's first key end
// with one key, the one that landed first; since a key only lands where
// no file is, a tombstone is never replaced by a key, and no Keys can
// undo another's erasure. There is no lock and nothing to recover after
// a crash: a temporary file left by one (named ".tmp-*") is never read.
func OpenKeyDir(ctx context.Context, dir string) (*Keys, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if dir == "" {
		return nil, fmt.Errorf("%w: key directory: empty path", blackboard.ErrInvalidInput)
	}
	switch err := os.Mkdir(dir, 0o700); {
	case errors.Is(err, fs.ErrExist):
	case err != nil:
		return nil, fmt.Errorf("key directory: %w", err)
	default:
		if err := syncDir(filepath.Dir(dir)); err != nil {
			return nil, err
		}
	}
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("key directory: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("%w: key directory %s is not a directory", blackboard.ErrInvalidInput, dir)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("%w: key directory %s has mode %#o: group or others may reach it (want 0700)", blackboard.ErrInvalidInput, dir, perm)
	}
	return &Keys{dir: dir}, nil
}

// keyName is the name of the key of trace traceID in namespace, which
// must both be valid, and a directory's file name for it: the hex SHA-256
// of the trace id alone for [blackboard.DefaultNamespace] (and ""), as a
// key directory named every trace's file before keys were per namespace,
// so that those files stay the default namespace's keys; and for any
// other namespace the hex SHA-256 of a zero byte followed by the JSON
// array [namespace, traceID]. Two different pairs never share a name but
// by a SHA-256 collision: the JSON array decodes back to its pair, and a
// trace id never begins with a zero byte (it holds no control
// character), so no default-namespace trace id hashes the same input as
// another namespace's pair, not even a trace id spelled like a JSON array.
func keyName(namespace, traceID string) (string, error) {
	namespace = cmp.Or(namespace, blackboard.DefaultNamespace)
	if namespace == blackboard.DefaultNamespace || !keysPerNamespace() {
		sum := sha256.Sum256([]byte(traceID))
		return hex.EncodeToString(sum[:]), nil
	}
	pair, err := json.Marshal([2]string{namespace, traceID})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(append([]byte{0}, pair...))
	return hex.EncodeToString(sum[:]), nil
}

// checkKeyArgs checks a namespace and a trace id given to Key or Erase,
// and returns the name of the trace's key ([keyName]).
func checkKeyArgs(namespace, traceID string) (string, error) {
	if err := ident.Check(traceID, 512); err != nil {
		return "", fmt.Errorf("%w: trace id: %v", blackboard.ErrInvalidInput, err)
	}
	if namespace != "" {
		if err := ident.Check(namespace, 512); err != nil {
			return "", fmt.Errorf("%w: namespace: %v", blackboard.ErrInvalidInput, err)
		}
	}
	return keyName(namespace, traceID)
}

// readTrace reads a trace's file: its key, or erased, or an error
// wrapping [fs.ErrNotExist] when the trace has no file yet, or
// [blackboard.ErrInvalidInput] when the file is not a trace file.
func readTrace(path string) (key []byte, erased bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, fmt.Errorf("key directory: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("key directory: %w", err)
	}
	if !info.Mode().IsRegular() {
		return nil, false, fmt.Errorf("%w: key directory: %s is not a regular file", blackboard.ErrInvalidInput, path)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return nil, false, fmt.Errorf("%w: key directory: %s has mode %#o: group or others may read it (want 0600)", blackboard.ErrInvalidInput, path, perm)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTraceFile+1))
	if err != nil {
		return nil, false, fmt.Errorf("key directory: %w", err)
	}
	var tf traceFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&tf); err != nil || len(b) > maxTraceFile || tf.Version != keyDirVersion {
		return nil, false, fmt.Errorf("%w: key directory: %s is not a trace file of version %d (%v)", blackboard.ErrInvalidInput, path, keyDirVersion, err)
	}
	// A tombstone that still holds a key is damaged, except under the
	// switch that makes Erase keep the key.
	if tf.Erased && (tf.Key == "" || !erasesKey()) {
		return nil, true, nil
	}
	key, err = base64.StdEncoding.DecodeString(tf.Key)
	if err != nil || len(key) < MinKey || tf.Erased {
		return nil, false, fmt.Errorf("%w: key directory: %s holds no valid key", blackboard.ErrInvalidInput, path)
	}
	return key, false, nil
}

// writeTemp writes tf to a new temporary file in dir, mode 0600, synced
// and closed, and returns its path; on an error it leaves no file.
func writeTemp(dir string, tf traceFile) (path string, err error) {
	b, err := json.Marshal(tf)
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return "", fmt.Errorf("key directory: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	// CreateTemp makes the file 0600; Chmod says so whatever the umask.
	if err = f.Chmod(0o600); err != nil {
		return "", fmt.Errorf("key directory: %w", err)
	}
	if _, err = f.Write(append(b, '\n')); err != nil {
		return "", fmt.Errorf("key directory: %w", err)
	}
	if err = f.Sync(); err != nil {
		return "", fmt.Errorf("key directory: %w", err)
	}
	if err = f.Close(); err != nil {
		return "", fmt.Errorf("key directory: %w", err)
	}
	return f.Name(), nil
}

// syncDir makes the directory's entries durable: a key given, or an
// erasure, that a crash could undo would not be one.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("key directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("key directory: sync %s: %w", dir, err)
	}
	return nil
}

// Key returns the key of trace traceID in namespace ("" is
// [blackboard.DefaultNamespace]), making a random one on the trace's first
// use (kept, in a key directory, before Key returns). It returns an error
// wrapping [ErrErased] for an erased trace, [blackboard.ErrInvalidInput] for an
// id that is not a trace id, a namespace that is not a name or a damaged
// trace file, [blackboard.ErrClosed] after [Keys.Close], and
// the file system's error when a new key cannot be kept (no key is given
// then). The key returned is a copy.
func (k *Keys) Key(ctx context.Context, namespace, traceID string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	name, err := checkKeyArgs(namespace, traceID)
	if err != nil {
		return nil, err
	}
	if k.dir != "" {
		k.mu.RLock()
		defer k.mu.RUnlock()
		if k.closed {
			return nil, fmt.Errorf("%w: the keyring is closed", blackboard.ErrClosed)
		}
		return k.dirKey(name, namespace, traceID)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case k.closed:
		return nil, fmt.Errorf("%w: the keyring is closed", blackboard.ErrClosed)
	case k.erased[name]:
		return nil, erasedError(namespace, traceID)
	}
	if key, ok := k.keys[name]; ok {
		return slices.Clone(key), nil
	}
	key := make([]byte, MinKey)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	k.keys[name] = key
	return slices.Clone(key), nil
}

// erasedError is the error of a call in an erased trace.
func erasedError(namespace, traceID string) error {
	return fmt.Errorf("%w: trace %q in namespace %q", ErrErased, traceID, cmp.Or(namespace, blackboard.DefaultNamespace))
}

// dirKey is Key in a key directory, for the trace's key name.
func (k *Keys) dirKey(name, namespace, traceID string) ([]byte, error) {
	path := filepath.Join(k.dir, name)
	key, erased, err := readTrace(path)
	switch {
	case erased:
		return nil, erasedError(namespace, traceID)
	case err == nil:
		return key, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	key = make([]byte, MinKey)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	tmp, err := writeTemp(k.dir, traceFile{Version: keyDirVersion, Key: base64.StdEncoding.EncodeToString(key)})
	if err != nil {
		return nil, err
	}
	// A link, unlike a rename, fails where a file is: a key another Keys
	// made first, which both then use, or a tombstone, which stays.
	lerr := keyDirLink(tmp, path)
	os.Remove(tmp)
	if errors.Is(lerr, fs.ErrExist) {
		clear(key)
		key, erased, err := readTrace(path)
		switch {
		case erased:
			return nil, erasedError(namespace, traceID)
		case err != nil:
			return nil, err
		}
		return key, nil
	}
	if lerr != nil {
		return nil, fmt.Errorf("key directory: %w", lerr)
	}
	if err := syncDir(k.dir); err != nil {
		return nil, err
	}
	return key, nil
}

// Erase destroys the key of trace traceID in namespace ("" is
// [blackboard.DefaultNamespace]) and remembers the trace as erased: in a
// key directory, a tombstone (synced) replaces the trace's file in one
// rename and the directory is synced, so that no file of the directory
// holds the key after. Afterwards the trace's stored hashes match no
// value anyone can compute, and [Keys.Key] answers [ErrErased] for it,
// in every Keys of the directory. Other traces' keys are untouched, and
// nothing in the store changes: the same trace id in another namespace
// is another trace, and keeps its key. A trace that has no key yet is marked
// erased too; erasing twice is no error. On an error nothing is erased.
// Copies of the key made before Erase (backups of the directory, a
// gate's call in flight) are beyond its reach.
func (k *Keys) Erase(ctx context.Context, namespace, traceID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	name, err := checkKeyArgs(namespace, traceID)
	if err != nil {
		return err
	}
	if k.dir != "" {
		k.mu.RLock()
		defer k.mu.RUnlock()
		if k.closed {
			return fmt.Errorf("%w: the keyring is closed", blackboard.ErrClosed)
		}
		return k.dirErase(name)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return fmt.Errorf("%w: the keyring is closed", blackboard.ErrClosed)
	}
	if erasesKey() {
		clear(k.keys[name]) // the ring's own copy
		delete(k.keys, name)
	}
	k.erased[name] = true
	return nil
}

// dirErase is Erase in a key directory, for the trace's key name.
func (k *Keys) dirErase(name string) error {
	path := filepath.Join(k.dir, name)
	tomb := traceFile{Version: keyDirVersion, Erased: true}
	if !erasesKey() {
		if key, _, err := readTrace(path); err == nil {
			tomb.Key = base64.StdEncoding.EncodeToString(key)
		}
	}
	tmp, err := writeTemp(k.dir, tomb)
	if err != nil {
		return err
	}
	if err := keyDirRename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("key directory: %w", err)
	}
	return syncDir(k.dir)
}

// Close forgets the keys (in memory) and makes the keyring refuse every
// call; a key directory keeps its files. Closing twice is no error.
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
	return nil
}
