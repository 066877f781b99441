package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// checkPath refuses, before any work, an output path the run could not
// write: its directory must exist and the path must not be a directory.
func checkPath(flagName, path string) error {
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: --%s %s: directory %s does not exist", ErrUsage, flagName, path, dir)
	case err != nil:
		return fmt.Errorf("%w: --%s %s: %v", ErrUsage, flagName, path, err)
	case !fi.IsDir():
		return fmt.Errorf("%w: --%s %s: %s is not a directory", ErrUsage, flagName, path, dir)
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("%w: --%s %s is a directory", ErrUsage, flagName, path)
	}
	return nil
}

// output is a file the run writes: it goes to a temporary file in the
// same directory and replaces path only when the run succeeds, so a failed
// or interrupted run leaves an earlier file of that name as it was.
type output struct {
	path string
	f    *os.File
}

// create opens the temporary file of path.
func create(path string) (*output, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	// CreateTemp makes the file private; give the result the mode the file
	// it replaces had, or the usual one.
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := f.Chmod(mode); err != nil {
		return nil, errors.Join(err, f.Close(), os.Remove(f.Name()))
	}
	return &output{path: path, f: f}, nil
}

// Write writes to the temporary file; an error names the file the run
// was writing.
func (o *output) Write(p []byte) (int, error) {
	n, err := o.f.Write(p)
	if err != nil {
		err = &writeError{path: o.path, err: err}
	}
	return n, err
}

// writeError is a failed write to an output file.
type writeError struct {
	path string
	err  error
}

func (e *writeError) Error() string { return "write " + e.path + ": " + e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }

// commit closes the temporary file and puts it in place of path.
func (o *output) commit() error {
	if err := o.f.Close(); err != nil {
		return errors.Join(fmt.Errorf("write %s: %w", o.path, err), os.Remove(o.f.Name()))
	}
	if err := os.Rename(o.f.Name(), o.path); err != nil {
		return errors.Join(err, os.Remove(o.f.Name()))
	}
	return nil
}

// abort closes and removes the temporary file; path is left untouched.
func (o *output) abort() {
	_ = o.f.Close()
	_ = os.Remove(o.f.Name())
}
