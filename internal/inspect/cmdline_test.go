package inspect_test

import (
	"os"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/internal/inspect"
)

// TestCommandLine: bk behaves as every program of the module does: -h and
// help print the usage to stdout and exit 0, at the top and for each
// command; an unknown flag or extra argument is a usage error (exit 2,
// usage on stderr); exporting a trace that does not exist fails.
func TestCommandLine(t *testing.T) {
	db := toolgateDatabase(t)
	for _, c := range []struct {
		args         []string
		code         int
		stdout       string
		stderrUsage  bool
		stderrSubstr string
	}{
		{[]string{"-h"}, inspect.ExitOK, "usage: bk", false, ""},
		{[]string{"help"}, inspect.ExitOK, "usage: bk", false, ""},
		{[]string{"timeline", "-h"}, inspect.ExitOK, "usage: bk timeline", false, ""},
		{[]string{"export", "--help"}, inspect.ExitOK, "usage: bk export", false, ""},
		{[]string{"--bogus", "traces"}, inspect.ExitUsage, "", true, "-bogus"},
		{[]string{"traces", "--bogus"}, inspect.ExitUsage, "", true, "-bogus"},
		{[]string{"traces", "extra"}, inspect.ExitUsage, "", true, `unexpected argument "extra"`},
		{[]string{"help", "extra"}, inspect.ExitUsage, "", true, `unexpected argument "extra"`},
		{[]string{"frobnicate"}, inspect.ExitUsage, "", true, `unknown command "frobnicate"`},
		{[]string{}, inspect.ExitUsage, "", true, "no command"},
		{[]string{"export", "--trace", "UNKNOWN"}, inspect.ExitError, "", false, `no trace "UNKNOWN"`},
	} {
		code, out, errOut := bk(t, append([]string{"--db", db}, c.args...)...)
		if code != c.code || !strings.Contains(out, c.stdout) || c.stdout == "" && out != "" ||
			c.stderrUsage != strings.Contains(errOut, "usage: bk") || !strings.Contains(errOut, c.stderrSubstr) {
			t.Errorf("bk %q: exit %d (want %d)\nstdout %q\nstderr %q", c.args, code, c.code, out, errOut)
		}
	}
}

// TestCorruptStore: a damaged database is reported as corrupt (exit 1), by
// every command, never as a trace or record that is missing.
func TestCorruptStore(t *testing.T) {
	db := toolgateDatabase(t)
	traces := mustBK(t, "--db", db, "traces")
	b, err := os.ReadFile(db)
	if err != nil || len(b) <= 4096 {
		t.Fatalf("%d bytes, %v", len(b), err)
	}
	for i := 4096; i < len(b); i++ {
		b[i] = 0xA5
	}
	if err := os.WriteFile(db, b, 0o644); err != nil {
		t.Fatal(err)
	}
	trace := strings.Fields(strings.Split(traces, "\n")[1])[0]
	for _, args := range [][]string{{"traces"}, {"timeline", trace}, {"export", "--trace", trace}, {"stats"}} {
		code, out, errOut := bk(t, append([]string{"--db", db}, args...)...)
		if code != inspect.ExitError || out != "" || !strings.Contains(errOut, db+" is corrupt") {
			t.Errorf("bk %q on a corrupt store: exit %d\nstdout %q\nstderr %q", args, code, out, errOut)
		}
	}
}
