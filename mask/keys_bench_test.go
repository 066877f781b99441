package mask

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// A trace's first key and a known trace's key, with 10, 1,000 and 10,000
// traces already in the directory: the cost is the trace's own file, so
// it stays flat as the directory grows.
func BenchmarkKeyDir(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{10, 1000, 10000} {
		dir := b.TempDir() + "/keys"
		k, err := OpenKeyDir(ctx, dir)
		if err != nil {
			b.Fatal(err)
		}
		// The traces already there, written directly: no fsync per file.
		key := make([]byte, MinKey)
		for i := range n {
			rand.Read(key)
			body, _ := json.Marshal(traceFile{Version: keyDirVersion, Key: base64.StdEncoding.EncodeToString(key)})
			if err := os.WriteFile(filepath.Join(dir, mustKeyName(b, fmt.Sprintf("trace-%d", i))), body, 0o600); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("first/traces=%d", n), func(b *testing.B) {
			for i := range b.N {
				if _, err := k.Key(ctx, "", fmt.Sprintf("new-%d-%d", b.N, i)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("known/traces=%d", n), func(b *testing.B) {
			for range b.N {
				if _, err := k.Key(ctx, "", "trace-7"); err != nil {
					b.Fatal(err)
				}
			}
		})
		k.Close()
	}
}

// mustKeyName is the default namespace's key name of traceID.
func mustKeyName(tb testing.TB, traceID string) string {
	name, err := keyName("", traceID)
	if err != nil {
		tb.Fatal(err)
	}
	return name
}
