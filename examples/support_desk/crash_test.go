//go:build unix

package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// child runs the desk in a child process (see TestMain) and returns its
// output and how it ended.
func child(t *testing.T, args ...string) (string, error) {
	t.Helper()
	argv, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	// A race-enabled binary sleeps a second before it exits, unless told not to.
	cmd.Env = append(os.Environ(), "BK_SUPPORT_DESK_CHILD="+string(argv), "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// killed reports whether err is a process's death by SIGKILL.
func killed(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// TestCrashAndRecover kills the desk inside a refund, after the payment API
// paid it and before the gate recorded the result, then runs it again on
// the same file: the second run recovers the refund (the payment API
// replays the payment for its key), finishes the tickets and finds every
// refund paid once. The first crash hits a refund the agent's call runs;
// the second, one the approver approved (run as the approval screen
// resolves it).
func TestCrashAndRecover(t *testing.T) {
	for _, c := range []struct {
		after   string
		ticket  string
		handled string
	}{
		{after: "1", ticket: "T1", handled: "0 of 8"},
		{after: "11", ticket: "T3", handled: "4 of 8"},
	} {
		t.Run("crash-after="+c.after, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "desk.db")
			out, err := child(t, "--db", db, "--approver", "supervisor", "--crash-after", c.after)
			if !killed(err) {
				t.Fatalf("first run: %v, want death by SIGKILL\n%s", err, out)
			}
			if !strings.Contains(out, "*** --crash-after "+c.after+": the payment API paid") {
				t.Errorf("first run did not say why it died\n%s", out)
			}
			checkLedgerFileHas(t, db+".world", c.ticket)
			checkDB(t, db) // what the killed process left

			out, err = child(t, "--db", db, "--approver", "supervisor")
			if err != nil {
				t.Fatalf("second run: %v\n%s", err, out)
			}
			for _, s := range []string{
				"Resuming: an earlier run handled " + c.handled + " messages.",
				"The supervisor recovered " + c.ticket + " issue_refund",
				"an idempotent replay: the payment API had paid it before the crash and moved no money now",
				"Every refund happened exactly once: 4 committed refunds, 3 paid",
			} {
				if !strings.Contains(out, s) {
					t.Errorf("second run lacks %q\n%s", s, out)
				}
			}
			checkLedgerFile(t, db+".world", 3)
			checkDB(t, db)
		})
	}
}

// checkLedgerFileHas checks that the crashed run's payment reached the
// journal: the money moved before the process died.
func checkLedgerFileHas(t *testing.T, path, ticket string) {
	t.Helper()
	order := map[string]string{"T1": "A1", "T2": "A2", "T3": "A3"}[ticket]
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"order_id":"`+order+`"`) {
		t.Errorf("the journal has no payment for %s:\n%s", order, data)
	}
}
