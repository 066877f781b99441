package sqlitestore_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/sqlitestore"
)

// The cross-process race: the test binary runs itself as helper processes
// (the environment says which database file and which helper), and every
// goroutine of every helper appends a record of its own and claims one key.
const (
	helperDBEnv = "BK_SQLITESTORE_HELPER_DB"
	helperIDEnv = "BK_SQLITESTORE_HELPER_ID"

	crossProcesses = 2
	crossGoroutine = 4
	crossKey       = "refund:ch_cross_process"
)

// TestStoreCrossProcessClaim checks that a once-key holds across
// processes: of the batches that helper processes on one file race to
// apply, each claiming the same key, exactly one lands, and with it its
// record.
func TestStoreCrossProcessClaim(t *testing.T) {
	if path := os.Getenv(helperDBEnv); path != "" {
		claimHelper(t, path, os.Getenv(helperIDEnv))
		return
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a stuck helper is killed
	defer cancel()
	path := filepath.Join(t.TempDir(), "bk.db")
	s := mustOpen(t, path) // the schema exists before the helpers start, so they race on the claim alone

	type helper struct {
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		stdout *bufio.Reader
		stderr bytes.Buffer
	}
	helpers := make([]*helper, crossProcesses)
	for i := range helpers {
		h := &helper{cmd: exec.CommandContext(ctx, os.Args[0], "-test.run=^TestStoreCrossProcessClaim$", "-test.count=1")}
		h.cmd.Env = append(os.Environ(), helperDBEnv+"="+path, helperIDEnv+"="+strconv.Itoa(i))
		h.cmd.Stderr = &h.stderr
		var err error
		if h.stdin, err = h.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		out, err := h.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		h.stdout = bufio.NewReader(out)
		if err := h.cmd.Start(); err != nil {
			t.Fatalf("starting helper %d: %v", i, err)
		}
		t.Cleanup(func() { _ = h.cmd.Wait() }) // reaps a helper a failure below left running
		helpers[i] = h
	}
	// Each helper says when its store is open; closing their stdin then
	// releases them together.
	for i, h := range helpers {
		if line, err := h.stdout.ReadString('\n'); line != "ready\n" {
			t.Fatalf("helper %d did not get ready: %q, %v; stderr: %s", i, line, err, h.stderr.String())
		}
	}
	for _, h := range helpers {
		_ = h.stdin.Close()
	}
	wins := 0
	for i, h := range helpers {
		rest, _ := io.ReadAll(h.stdout)
		if err := h.cmd.Wait(); err != nil {
			t.Fatalf("helper %d: %v\nstdout: %s\nstderr: %s", i, err, rest, h.stderr.String())
		}
		var n int
		if _, err := fmt.Sscanf(string(rest), "won %d\n", &n); err != nil {
			t.Fatalf("helper %d reported %q: %v", i, rest, err)
		}
		wins += n
	}
	if wins != 1 {
		t.Errorf("%d batches claiming one key won across %d processes, want exactly 1", wins, crossProcesses)
	}

	claimant, err := s.ClaimedBy(t.Context(), "", crossKey)
	if err != nil {
		t.Fatalf("ClaimedBy after the race: %v", err)
	}
	landed := all(t, s)
	if len(landed) != 1 || landed[0].ID != claimant {
		t.Errorf("after the race the store holds records %v, want only the claimant %s", ids(landed), claimant)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var claims int
	if err := db.QueryRowContext(t.Context(), "SELECT count(*) FROM once_keys").Scan(&claims); err != nil || claims != 1 {
		t.Errorf("after the race the database holds %d claims (%v), want 1", claims, err)
	}
}

// claimHelper is the helper process: it opens the store, says "ready",
// waits for its stdin to close, races its goroutines and prints how many
// of their batches landed.
func claimHelper(t *testing.T, path, id string) {
	s, err := sqlitestore.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("helper %s: Open: %v", id, err)
	}
	defer s.Close()
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	errs := make([]error, crossGoroutine)
	var wg sync.WaitGroup
	for g := range crossGoroutine {
		wg.Go(func() {
			r := record(fmt.Sprintf("cross-%s-%d", id, g), 1)
			r.Slot, r.ID, r.Kind = blackboard.Actions, fmt.Sprintf("actions:cross-%s-%d:1", id, g), "issue_refund"
			errs[g] = s.Apply(t.Context(), store.Batch{Appends: []blackboard.Record{r}, Claims: []store.Claim{{Key: crossKey, RecordID: r.ID}}})
		})
	}
	wg.Wait()
	won := 0
	for g, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, blackboard.ErrDuplicateKey):
			t.Errorf("helper %s goroutine %d: %v, want success or ErrDuplicateKey", id, g, err)
		}
	}
	fmt.Printf("won %d\n", won)
}

// ids returns the records' ids.
func ids(recs []blackboard.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.ID
	}
	return out
}
