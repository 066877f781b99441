package cmdline_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// programs are the module's commands, by binary name and package.
var programs = map[string]string{
	"bk":            "./cmd/bk",
	"bench":         "./bench",
	"multi_episode": "./examples/multi_episode",
	"quickstart":    "./examples/quickstart",
	"subagents":     "./examples/subagents",
	"support_desk":  "./examples/support_desk",
	"tracing":       "./examples/tracing",
}

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// TestMain removes the programs build compiled.
func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// build compiles every program into a temporary directory, once for the
// tests (one go build: the linker runs for all of them in parallel).
func build(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds every program of the module")
	}
	buildOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		if binDir, buildErr = os.MkdirTemp("", "bk-programs"); buildErr != nil {
			return
		}
		args := []string{"build", "-o", binDir + string(os.PathSeparator)}
		for _, pkg := range programs {
			args = append(args, pkg)
		}
		root := filepath.Join(filepath.Dir(file), "..", "..")
		// bench/mutation exists only in the bkmutate build.
		mutation := []string{"build", "-tags", "bkmutate", "-o", binDir + string(os.PathSeparator), "./bench/mutation"}
		for _, a := range [][]string{args, mutation} {
			cmd := exec.Command("go", a...)
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go %s: %v\n%s", strings.Join(a, " "), err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

// run runs a program in dir and returns its exit code and output.
func run(t *testing.T, bin, dir, name string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, name), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BK_LLM_URL=", "BK_DB=")
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("%s %q: %v", name, args, err)
	}
	return code, o.String(), e.String()
}

// damage overwrites every page of the SQLite file at path but the first.
func damage(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || len(b) <= 8192 {
		t.Fatalf("%s: %d bytes, %v", path, len(b), err)
	}
	for i := 4096; i < len(b); i++ {
		b[i] = 0xA5
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPrograms: every program takes -h (usage on stdout, exit 0), refuses
// an unknown flag and an extra argument (exit 2, usage on stderr, nothing
// on stdout), and exits 0 when it did its work.
func TestPrograms(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	for _, name := range append(slices.Sorted(maps.Keys(programs)), "mutation") {
		for _, c := range []struct {
			args        []string
			code        int
			stdoutEmpty bool
			stream      string // where "usage" must appear: stdout or stderr
		}{
			{[]string{"-h"}, 0, false, "stdout"},
			{[]string{"--help"}, 0, false, "stdout"},
			{[]string{"--bogus"}, 2, true, "stderr"},
			{[]string{"extra", "arguments"}, 2, true, "stderr"},
		} {
			code, stdout, stderr := run(t, bin, dir, name, c.args...)
			where := map[string]string{"stdout": stdout, "stderr": stderr}[c.stream]
			if code != c.code || c.stdoutEmpty && stdout != "" || !strings.Contains(strings.ToLower(where), "usage") ||
				c.stream == "stdout" && stderr != "" {
				t.Errorf("%s %q: exit %d (want %d)\nstdout %.300q\nstderr %.300q", name, c.args, code, c.code, stdout, stderr)
			}
		}
	}
	for _, c := range []struct {
		name string
		args []string
		code int
	}{
		{"multi_episode", []string{"--episodes", "0"}, 2},
		{"quickstart", []string{"--store", "mongo"}, 2},
		{"bench", []string{"--seeds", "1", "--tasks", "stripe_refund_clean", "--out", ""}, 0},
		{"bench", []string{"--tasks", "paypal", "--out", ""}, 1},
		{"quickstart", nil, 0},
		{"tracing", nil, 0},
	} {
		if code, stdout, stderr := run(t, bin, dir, c.name, c.args...); code != c.code {
			t.Errorf("%s %q: exit %d (want %d)\nstdout %.300q\nstderr %.300q", c.name, c.args, code, c.code, stdout, stderr)
		}
	}
}

// TestDamagedInput: a corrupt database is reported as corrupt, naming the
// file, with exit 1, by the inspector and by every program that writes a
// database, and none of them changes it or creates a file beside it; a
// trace that does not exist is not exported as nothing; support_desk
// refuses a corrupt world journal before it creates its database.
func TestDamagedInput(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	if code, _, stderr := run(t, bin, dir, "multi_episode", "--db", "good.db", "--episodes", "3"); code != 0 {
		t.Fatalf("multi_episode: exit %d: %s", code, stderr)
	}
	if code, _, stderr := run(t, bin, dir, "bk", "--db", "good.db", "export", "--trace", "UNKNOWN"); code != 1 || !strings.Contains(stderr, `no trace "UNKNOWN"`) {
		t.Errorf("bk export --trace UNKNOWN: exit %d: %s", code, stderr)
	}
	good, err := os.ReadFile(filepath.Join(dir, "good.db"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"bk", []string{"traces"}},
		{"bk", []string{"timeline", "UNKNOWN"}},
		{"bk", []string{"export"}},
		{"bk", []string{"verify"}},
		{"multi_episode", []string{"--episodes", "2"}},
		{"quickstart", nil},
		{"support_desk", nil},
		{"bench", []string{"--seeds", "1", "--tasks", "stripe_refund_clean", "--out", ""}},
	} {
		sub := t.TempDir()
		db := filepath.Join(sub, "bad.db")
		os.WriteFile(db, good, 0o644)
		damage(t, db)
		before, _ := os.ReadFile(db)
		code, stdout, stderr := run(t, bin, sub, c.name, append([]string{"--db", "bad.db"}, c.args...)...)
		if code != 1 || !strings.Contains(stderr, "bad.db") || !strings.Contains(stderr, "corrupt") || strings.Contains(stderr, "no trace") {
			t.Errorf("%s %q on a corrupt database: exit %d\nstdout %.300q\nstderr %.300q", c.name, c.args, code, stdout, stderr)
		}
		after, _ := os.ReadFile(db)
		entries, _ := os.ReadDir(sub)
		if !bytes.Equal(before, after) || len(entries) != 1 {
			t.Errorf("%s %q changed the corrupt database or created files: %d entries", c.name, c.args, len(entries))
		}
	}

	sub := t.TempDir()
	os.WriteFile(filepath.Join(sub, "desk.db.world"), []byte("{not json\n"), 0o644)
	code, _, stderr := run(t, bin, sub, "support_desk", "--db", "desk.db")
	if _, err := os.Stat(filepath.Join(sub, "desk.db")); code != 1 || !errors.Is(err, os.ErrNotExist) || !strings.Contains(stderr, "desk.db.world") {
		t.Errorf("support_desk with a corrupt world journal: exit %d, database %v: %s", code, err, stderr)
	}
}
