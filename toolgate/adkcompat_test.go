package toolgate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestADKBuildsBesideTheCore builds testdata/adkcompat, an ADK-Go v2.2.0
// agent whose tool calls go through the gate, against this checkout: its
// go.mod requires google.golang.org/adk/v2 v2.2.0 and this module, with no
// replace but the one naming the checkout (the module is not published),
// so the build list is what an integrator's would be. It fails when this
// module requires versions ADK-Go does not compile beside (otel v1.47.0
// brought otel/log v1.47.0, whose API ADK's telemetry does not build
// against), and checks that the program runs a gated call. It needs the
// Go module proxy: it skips, saying so, when the proxy cannot be reached,
// and under -short.
func TestADKBuildsBesideTheCore(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the ADK-Go v2.2.0 build beside the core is not checked")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command (%v): the ADK-Go v2.2.0 build beside the core is not checked", err)
	}
	t.Parallel()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"go.mod", "main.go"} {
		b, err := os.ReadFile(filepath.Join("testdata", "adkcompat", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()
	// The module cache and the proxy are the user's; the workspace, the
	// vendor mode and a toolchain switch are not.
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	run := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, gobin, args...)
		cmd.Dir, cmd.Env = dir, env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	if out, err := run("mod", "download", "google.golang.org/adk/v2@v2.2.0"); err != nil {
		t.Skipf("the Go module proxy is not reachable (%v: %s): the ADK-Go v2.2.0 build beside the core is not checked", err, strings.TrimSpace(out))
	}
	if out, err := run("mod", "edit", "-replace", "github.com/blackboardkernel/bk="+root); err != nil {
		t.Fatalf("go mod edit: %v\n%s", err, out)
	}
	if out, err := run("mod", "tidy"); err != nil {
		t.Fatalf("go mod tidy: %v\n%s", err, out)
	}
	out, err := run("mod", "edit", "-json")
	if err != nil {
		t.Fatalf("go mod edit -json: %v\n%s", err, out)
	}
	var mod struct {
		Replace []struct{ Old struct{ Path string } }
	}
	if err := json.Unmarshal([]byte(out), &mod); err != nil {
		t.Fatal(err)
	}
	if len(mod.Replace) != 1 || mod.Replace[0].Old.Path != "github.com/blackboardkernel/bk" {
		t.Fatalf("replace directives %+v, want only the checkout's", mod.Replace)
	}
	bin := filepath.Join(dir, "adkcompat")
	if out, err := run("build", "-o", bin, "."); err != nil {
		t.Fatalf("an ADK-Go v2.2.0 program does not build beside this module: %v\n%s", err, out)
	}
	// The program reaches the package whose API clashed, and the gate.
	deps, err := run("list", "-deps", ".")
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, deps)
	}
	for _, pkg := range []string{"go.opentelemetry.io/otel/log", "google.golang.org/adk/v2/runner", "github.com/blackboardkernel/bk/toolgate"} {
		if !strings.Contains("\n"+deps, "\n"+pkg+"\n") {
			t.Errorf("the program does not build %s", pkg)
		}
	}
	cmd := exec.CommandContext(ctx, bin)
	cmd.Dir = dir
	got, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(got), "tool: executed EFFECT_SUCCEEDED") {
		t.Errorf("the program: %v\n%s", err, got)
	}
}
