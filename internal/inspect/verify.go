package inspect

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/chain"
	"github.com/blackboardkernel/bk/internal/cmdline"
	"github.com/blackboardkernel/bk/internal/ledger"
	"github.com/blackboardkernel/bk/invariant"
	"github.com/blackboardkernel/bk/store"
)

// keyFiles is the repeatable --key flag: files of trusted public keys.
type keyFiles []string

func (k *keyFiles) String() string     { return strings.Join(*k, ",") }
func (k *keyFiles) Set(v string) error { *k = append(*k, v); return nil }

func verifyFlags(fs *flag.FlagSet, e *env) {
	fs.Var(&e.keyFiles, "key", "a file holding a trusted checkpoint signer's Ed25519 public key, as 64 hex digits (repeat for several: a rotated key's old one too)")
	fs.StringVar(&e.trust, "trust", "", "a file of checkpoints kept outside the store (kernel.Config.OnCheckpoint's), as JSON objects one after another: the store must hold each as it was (newer ones dropped are caught)")
	fs.StringVar(&e.bundle, "bundle", "", "verify this evidence bundle (bk export --bundle) offline, against --key, instead of a store")
	e.check = func() error {
		if e.bundle != "" {
			if len(e.keyFiles) == 0 {
				return cmdline.Usagef("--bundle needs --key: a bundle is only as good as the key that signed it")
			}
			e.offline = true // no store to open
		}
		return nil
	}
}

// chainIntact is invariant.Check's name for a broken history, which
// bk verify reports from its own walk, with the fault.
const chainIntact = "chain_intact"

// readTrusted reads --trust: checkpoints kept outside the store (what
// kernel.Config.OnCheckpoint was handed), as JSON objects one after
// another (JSON lines, say), each as chain.Checkpoint encodes.
func readTrusted(path string) ([]chain.Checkpoint, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--trust: %w", err)
	}
	defer f.Close()
	var out []chain.Checkpoint
	dec := json.NewDecoder(f)
	dec.DisallowUnknownFields()
	for {
		var c chain.Checkpoint
		if err := dec.Decode(&c); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("--trust %s: checkpoint %d: %w: %v", path, len(out)+1, blackboard.ErrInvalidInput, err)
		}
		out = append(out, c)
	}
}

// readKey reads a public key file: the 32-byte Ed25519 public key as 64
// hex digits, space around them ignored.
func readKey(path string) (ed25519.PublicKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--key: %w", err)
	}
	s := strings.TrimSpace(string(b))
	k, err := hex.DecodeString(s)
	if err != nil || len(k) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("--key %s: %w: a public key file holds the %d-byte Ed25519 public key as %d hex digits", path, blackboard.ErrInvalidInput, ed25519.PublicKeySize, 2*ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(k), nil
}

func readKeys(paths []string) ([]ed25519.PublicKey, error) {
	var keys []ed25519.PublicKey
	for _, p := range paths {
		k, err := readKey(p)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, nil
}

func keyIDs(keys []ed25519.PublicKey) []string {
	ids := make([]string, len(keys))
	for i, k := range keys {
		ids[i] = chain.KeyID(k)
	}
	return ids
}

// VerifyTrace is one trace's row of bk verify.
type verifyTrace struct {
	Namespace string `json:"namespace"`
	Trace     string `json:"trace"`
	Events    uint64 `json:"events"`
	// Covered: a checkpoint names the trace (its signature checked when
	// signatures_checked).
	Covered bool         `json:"covered"`
	Break   *chain.Break `json:"break,omitempty"`
}

type verifyViolation struct {
	Invariant string `json:"invariant"`
	Trace     string `json:"trace"`
	RecordID  string `json:"record_id"`
	Detail    string `json:"detail"`
}

// verifyReport is what bk verify prints.
type verifyReport struct {
	OK                bool           `json:"ok"`
	Traces            []verifyTrace  `json:"traces"`
	Checkpoints       int            `json:"checkpoints"`
	CheckpointBreaks  []*chain.Break `json:"checkpoint_breaks"`
	SignaturesChecked bool           `json:"signatures_checked"`
	// Keys are the ids of the keys given; SignedBy those that signed the
	// checkpoints, in order of first use (more than one: a rotation).
	Keys     []string `json:"keys"`
	SignedBy []string `json:"signed_by"`
	// Trusted counts the checkpoints --trust gave, which the store must
	// hold as they were.
	Trusted    int               `json:"trusted"`
	Violations []verifyViolation `json:"violations"`
}

func runVerify(ctx context.Context, e *env, _ []string) error {
	if e.offline {
		return verifyBundleFile(e)
	}
	keys, err := readKeys(e.keyFiles)
	if err != nil {
		return err
	}
	ch, ok := e.store.(store.Chainer)
	if !ok {
		return fmt.Errorf("inspect: verify: %s keeps no hash chains", e.where())
	}
	trusted, err := readTrusted(e.trust)
	if err != nil {
		return err
	}
	rep, err := ledger.Verify(ctx, ch, keys, trusted...)
	if err != nil {
		return err
	}
	out := verifyReport{Traces: []verifyTrace{}, CheckpointBreaks: []*chain.Break{}, Violations: []verifyViolation{},
		Checkpoints: rep.Checkpoints, SignaturesChecked: rep.Signed, Keys: keyIDs(keys), SignedBy: rep.Keys, Trusted: len(trusted)}
	if out.SignedBy == nil {
		out.SignedBy = []string{}
	}
	broken := 0
	for _, t := range rep.Traces {
		if !e.inNamespace(t.Head.Namespace) {
			continue
		}
		out.Traces = append(out.Traces, verifyTrace{Namespace: t.Head.Namespace, Trace: t.Head.Trace, Events: t.Head.Len, Covered: t.Covered, Break: t.Break})
		if t.Break != nil {
			broken++
		}
	}
	for _, b := range rep.Broken {
		if e.inNamespace(b.Namespace) {
			out.CheckpointBreaks = append(out.CheckpointBreaks, b)
		}
	}
	viols, err := invariant.Check(ctx, e.store)
	if err != nil {
		return err
	}
	for _, v := range viols {
		if v.Invariant == chainIntact {
			continue // the same walk as above, printed there with its fault
		}
		out.Violations = append(out.Violations, verifyViolation{v.Invariant, v.TraceID, v.RecordID, v.Detail})
	}
	out.OK = broken == 0 && len(out.CheckpointBreaks) == 0 && len(out.Violations) == 0
	if e.json {
		err = writeJSON(e.out, out)
	} else {
		err = writeVerify(e, &out)
	}
	if err != nil {
		return err
	}
	if !out.OK {
		return fmt.Errorf("verify: %s does not hold: %d broken trace(s), %d checkpoint break(s), %d invariant violation(s)",
			e.where(), broken, len(out.CheckpointBreaks), len(out.Violations))
	}
	return nil
}

// brokenLine words a break for a person: the fault, where, and what.
func brokenLine(b *chain.Break) string {
	s := fmt.Sprintf("%s at event %d", b.Fault, b.Seq)
	if b.RecordID != "" {
		s += ", record " + b.RecordID
	}
	return s + ": " + b.Detail
}

func writeVerify(e *env, r *verifyReport) error {
	w := e.out
	if len(r.Traces) == 0 {
		fmt.Fprintln(w, "no traces")
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NAMESPACE\tTRACE\tEVENTS\tCHECKPOINT\tCHAIN")
		for _, t := range r.Traces {
			cov := "none yet"
			switch {
			case t.Trace == ledger.Trace:
				cov = "(these)" // the checkpoints' own trace: each is signed
			case t.Covered && r.SignaturesChecked:
				cov = "signed"
			case t.Covered:
				cov = "unchecked"
			}
			state := "ok"
			if t.Break != nil {
				state = "BROKEN: " + brokenLine(t.Break)
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", Inert(t.Namespace), Inert(clip(t.Trace, 40)), t.Events, cov, Inert(state))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	switch {
	case r.Checkpoints == 0:
		fmt.Fprintln(w, "checkpoints: none (a kernel signs them with kernel.Config.Signer)")
	case r.SignaturesChecked:
		by := ""
		if len(r.SignedBy) > 0 {
			by = " (signed by " + strings.Join(r.SignedBy, ", ") + ")"
		}
		fmt.Fprintf(w, "checkpoints: %d, signatures checked against key %s%s\n", r.Checkpoints, strings.Join(r.Keys, ", "), by)
	default:
		fmt.Fprintf(w, "checkpoints: %d, signatures NOT checked (give the signers' public keys with --key FILE)\n", r.Checkpoints)
	}
	if r.Trusted > 0 {
		fmt.Fprintf(w, "checkpoints: %d kept elsewhere (--trust) checked against the store's\n", r.Trusted)
	}
	for _, b := range r.CheckpointBreaks {
		fmt.Fprintf(w, "checkpoints BROKEN in namespace %s: %s, record %s: %s\n", Inert(b.Namespace), b.Fault, Inert(b.RecordID), Inert(b.Detail))
	}
	if len(r.CheckpointBreaks) == 0 {
		fmt.Fprintln(w, "checkpoints: hold")
	}
	if len(r.Violations) == 0 {
		fmt.Fprintln(w, "invariants: hold")
	}
	for _, v := range r.Violations {
		fmt.Fprintf(w, "invariant VIOLATED: %s: %s (trace %q, record %s)\n", Inert(v.Invariant), Inert(v.Detail), Inert(v.Trace), Inert(v.RecordID))
	}
	_, err := fmt.Fprintln(w, map[bool]string{true: "verify: everything holds", false: "verify: FAILED"}[r.OK])
	return err
}

// bundleTraceRow is one trace of a verified bundle.
type bundleTraceRow struct {
	Namespace string `json:"namespace"`
	Trace     string `json:"trace"`
	Events    int    `json:"events"`
	// Signed is how many of the first events a checkpoint signed; the
	// rest are chained onto them, not signed.
	Signed     uint64 `json:"signed"`
	Checkpoint uint64 `json:"checkpoint"`
}

type bundleReport struct {
	File     string           `json:"file"`
	Verified bool             `json:"verified"`
	Error    string           `json:"error,omitempty"`
	Break    *chain.Break     `json:"break,omitempty"`
	Keys     []string         `json:"keys"`
	Traces   []bundleTraceRow `json:"traces"`
}

// verifyBundleFile is bk verify --bundle: no store, only the file and
// the keys.
func verifyBundleFile(e *env) error {
	keys, err := readKeys(e.keyFiles)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(e.bundle)
	if err != nil {
		return fmt.Errorf("--bundle: %w", err)
	}
	rep := bundleReport{File: e.bundle, Keys: keyIDs(keys), Traces: []bundleTraceRow{}}
	b, verr := chain.VerifyBundle(data, keys)
	if verr != nil {
		rep.Error = verr.Error()
		errors.As(verr, &rep.Break)
	} else {
		rep.Verified = true
		for _, t := range b.Traces {
			row := bundleTraceRow{Namespace: t.Namespace, Trace: t.Trace, Events: len(t.Events)}
			for _, cp := range b.Checkpoints {
				if h, ok := cp.Covers(t.Namespace, t.Trace); ok && cmp.Or(cp.Namespace, blackboard.DefaultNamespace) == cmp.Or(t.Namespace, blackboard.DefaultNamespace) && h.Len >= row.Signed {
					row.Signed, row.Checkpoint = h.Len, cp.Seq
				}
			}
			rep.Traces = append(rep.Traces, row)
		}
	}
	if e.json {
		if err := writeJSON(e.out, rep); err != nil {
			return err
		}
	} else if rep.Verified {
		fmt.Fprintf(e.out, "bundle %s verifies against key %s\n", e.bundle, strings.Join(rep.Keys, ", "))
		for _, t := range rep.Traces {
			fmt.Fprintf(e.out, "  trace %q of namespace %s: %d events, the first %d signed by checkpoint %d\n", Inert(t.Trace), Inert(t.Namespace), t.Events, t.Signed, t.Checkpoint)
		}
		fmt.Fprintln(e.out, "Events past a signed head are chained onto it, not signed. A checkpoint's place in its\nsequence is not checked offline: bk verify on the store checks it.")
	}
	if verr != nil {
		return fmt.Errorf("bundle %s does not verify: %w", e.bundle, verr)
	}
	return nil
}

// chainOf reads one trace's events from st.
func chainOf(ctx context.Context, st store.Chainer, namespace, traceID string) (chain.BundleTrace, error) {
	t := chain.BundleTrace{Namespace: namespace, Trace: traceID, Events: []chain.Event{}}
	for ev, err := range st.Chain(ctx, namespace, traceID) {
		if err != nil {
			return t, err
		}
		t.Events = append(t.Events, ev)
	}
	return t, nil
}

// namesPolicy reports whether a trace's records name a policy snapshot:
// a decision record's context or the trace's request record.
func namesPolicy(t *chain.BundleTrace) bool {
	for i := range t.Events {
		r := &t.Events[i].Record
		if t.Events[i].Op != chain.OpAppend {
			continue
		}
		if r.Kind == audit.KindRequest {
			if h, _ := r.Payload["policy"].(string); h != "" {
				return true
			}
		}
		if d, ok := audit.Of(*r); ok {
			if h, _ := d.Context["policy"].(string); h != "" {
				return true
			}
		}
	}
	return false
}

// exportSummary is what bk export --bundle prints once the file is
// written.
type exportSummary struct {
	File        string           `json:"file"`
	Traces      []bundleTraceRow `json:"traces"`
	Checkpoints []uint64         `json:"checkpoints"`
	// Left names a trace the bundle should hold and does not, and why.
	Left string `json:"left_out,omitempty"`
}

// exportBundle is bk export --bundle FILE --trace T: the trace's events,
// those of the policy trace its records name, and the checkpoints that
// cover them, written to FILE at once or not at all.
func exportBundle(ctx context.Context, e *env) error {
	ch, ok := e.store.(store.Chainer)
	if !ok {
		return fmt.Errorf("inspect: export: %s keeps no hash chains", e.where())
	}
	ns, err := traceNamespace(ctx, e.store, e.namespace, e.trace)
	if err != nil {
		return err
	}
	tr, err := chainOf(ctx, ch, ns, e.trace)
	if err != nil {
		return err
	}
	if len(tr.Events) == 0 {
		return fmt.Errorf("inspect: export: no trace %q: %w", e.trace, blackboard.ErrNotFound)
	}
	cp, ok, err := ledger.Covering(ctx, ch, ns, e.trace)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("inspect: export: no signed checkpoint covers trace %q: run the kernel with a signing key: %w", e.trace, blackboard.ErrNotFound)
	}
	b := chain.Bundle{Format: chain.BundleFormat, Traces: []chain.BundleTrace{tr}, Checkpoints: []chain.Checkpoint{cp}}
	sum := exportSummary{File: e.bundle}
	if pt := audit.PolicyTrace(ns); pt != e.trace && namesPolicy(&tr) {
		ptr, err := chainOf(ctx, ch, ns, pt)
		if err != nil {
			return err
		}
		pcp, ok, err := ledger.Covering(ctx, ch, ns, pt)
		switch {
		case err != nil:
			return err
		case len(ptr.Events) == 0:
			sum.Left = fmt.Sprintf("the policy trace %q: the store holds none", pt)
		case !ok:
			sum.Left = fmt.Sprintf("the policy trace %q: no signed checkpoint covers it", pt)
		default:
			b.Traces = append(b.Traces, ptr)
			if pcp.Seq != cp.Seq {
				b.Checkpoints = append(b.Checkpoints, pcp)
			}
		}
	}
	data, err := b.Encode()
	if err != nil {
		return err
	}
	if err := writeAtomic(e.bundle, data); err != nil {
		return err
	}
	for _, c := range b.Checkpoints {
		sum.Checkpoints = append(sum.Checkpoints, c.Seq)
	}
	for _, t := range b.Traces {
		row := bundleTraceRow{Namespace: t.Namespace, Trace: t.Trace, Events: len(t.Events)}
		for _, c := range b.Checkpoints {
			if h, ok := c.Covers(t.Namespace, t.Trace); ok {
				row.Signed, row.Checkpoint = h.Len, c.Seq
			}
		}
		sum.Traces = append(sum.Traces, row)
	}
	if e.json {
		return writeJSON(e.out, sum)
	}
	fmt.Fprintf(e.out, "wrote %s\n", e.bundle)
	for _, t := range sum.Traces {
		fmt.Fprintf(e.out, "  trace %q of namespace %s: %d events, the first %d signed by checkpoint %d\n", Inert(t.Trace), Inert(t.Namespace), t.Events, t.Signed, t.Checkpoint)
	}
	if sum.Left != "" {
		fmt.Fprintf(e.out, "  left out: %s\n", Inert(sum.Left))
	}
	return nil
}

// writeAtomic writes data to path through a temporary file in the same
// directory, renamed over path once whole: a failure leaves no partial
// file.
func writeAtomic(path string, data []byte) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
