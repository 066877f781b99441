package cmdline

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
)

func newFlags() *flag.FlagSet {
	fs := flag.NewFlagSet("prog", flag.ContinueOnError)
	fs.Int("n", 1, "a number")
	return fs
}

// TestParse: -h goes to stdout as flag.ErrHelp (exit 0); a bad flag, a bad
// value and an extra argument go to stderr with the usage, as usage errors
// (exit 2) that Exit does not print twice; good arguments pass silently.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		args           []string
		max            int
		code           int
		stdout, stderr string // substrings; "" means empty
	}{
		{[]string{"-h"}, 0, ExitOK, "-n int", ""},
		{[]string{"--help"}, 0, ExitOK, "-n int", ""},
		{[]string{"--bogus"}, 0, ExitUsage, "", "prog: flag provided but not defined: -bogus"},
		{[]string{"-n", "x"}, 0, ExitUsage, "", "invalid value"},
		{[]string{"extra"}, 0, ExitUsage, "", `prog: unexpected argument "extra"`},
		{[]string{"a", "b"}, 1, ExitUsage, "", `unexpected argument "b"`},
		{[]string{"-n", "2", "a"}, 1, ExitOK, "", ""},
	} {
		var out, errOut strings.Builder
		err := Parse(newFlags(), c.args, c.max, &out, &errOut)
		var again strings.Builder
		code := Exit("prog", err, &again, func(w io.Writer) { io.WriteString(w, "usage\n") })
		if code != c.code || again.Len() != 0 {
			t.Errorf("%q: exit %d (want %d), Exit printed %q", c.args, code, c.code, again.String())
		}
		for _, s := range []struct{ got, want string }{{out.String(), c.stdout}, {errOut.String(), c.stderr}} {
			if s.want == "" && s.got != "" || !strings.Contains(s.got, s.want) {
				t.Errorf("%q: printed %q, want %q", c.args, s.got, s.want)
			}
		}
		if c.code == ExitUsage && !strings.Contains(errOut.String(), "-n int") {
			t.Errorf("%q: no usage on stderr: %q", c.args, errOut.String())
		}
	}
}

// TestExit: other errors are printed once, named by the program, with exit
// 1; Usagef's errors exit 2, followed by the usage.
func TestExit(t *testing.T) {
	for _, c := range []struct {
		err  error
		code int
		text string
	}{
		{nil, ExitOK, ""},
		{flag.ErrHelp, ExitOK, ""},
		{errors.New("data.json: bad"), ExitError, "prog: data.json: bad\n"},
		{errors.New("prog: said so"), ExitError, "prog: said so\n"},
		{Usagef("--n %d is too small", 0), ExitUsage, "prog: usage: --n 0 is too small\nusage\n"},
	} {
		var b strings.Builder
		if code := Exit("prog", c.err, &b, func(w io.Writer) { io.WriteString(w, "usage\n") }); code != c.code || b.String() != c.text {
			t.Errorf("Exit(%v) = %d, %q; want %d, %q", c.err, code, b.String(), c.code, c.text)
		}
	}
}
