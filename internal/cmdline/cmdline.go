package cmdline

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// The exit codes of every program.
const (
	ExitOK    = 0 // done (or -h)
	ExitError = 1 // failed
	ExitUsage = 2 // the command line is wrong
)

// ErrUsage is wrapped by every error about the command line: [Parse]'s,
// and the ones a program makes with [Usagef].
var ErrUsage = errors.New("usage")

// Usagef returns an error wrapping [ErrUsage] with the formatted message
// (%w verbs wrap as in fmt.Errorf).
func Usagef(format string, a ...any) error {
	return fmt.Errorf("%w: %w", ErrUsage, fmt.Errorf(format, a...))
}

// Parse parses args with fs and refuses more than maxArgs positional
// arguments. -h (or --help) prints fs's usage to stdout and returns
// flag.ErrHelp; a bad flag or an extra argument prints the error and the
// usage to stderr and returns an error wrapping [ErrUsage]. fs's Usage, if
// set, must print to fs.Output(). Parse sets fs's output.
func Parse(fs *flag.FlagSet, args []string, maxArgs int, stdout, stderr io.Writer) error {
	fs.SetOutput(io.Discard) // the flag package's own message goes to the right stream below
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fs.Usage()
		return err
	case err == nil && fs.NArg() > maxArgs:
		err = fmt.Errorf("unexpected argument %q", fs.Arg(maxArgs))
	case err == nil:
		fs.SetOutput(stderr)
		return nil
	}
	fs.SetOutput(stderr)
	fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
	fs.Usage()
	return &printedError{err}
}

// Code is the exit code for a program's error: 0 for nil and
// flag.ErrHelp, 2 for an error wrapping [ErrUsage], 1 for any other.
func Code(err error) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return ExitOK
	case errors.Is(err, ErrUsage):
		return ExitUsage
	}
	return ExitError
}

// Exit reports err on stderr as "name: error" and returns its exit code,
// for main to pass to os.Exit. Nothing is printed for nil or
// flag.ErrHelp, nor for a usage error [Parse] printed already; after any
// other usage error, usage (if not nil) prints the usage to stderr.
func Exit(name string, err error, stderr io.Writer, usage func(io.Writer)) int {
	code := Code(err)
	var printed *printedError
	if code != ExitOK && !errors.As(err, &printed) {
		msg := err.Error()
		if !strings.HasPrefix(msg, name+": ") {
			msg = name + ": " + msg
		}
		fmt.Fprintln(stderr, msg)
		if code == ExitUsage && usage != nil {
			usage(stderr)
		}
	}
	return code
}

// printedError is a usage error Parse has printed already.
type printedError struct{ err error }

func (e *printedError) Error() string   { return e.err.Error() }
func (e *printedError) Unwrap() []error { return []error{ErrUsage, e.err} }
