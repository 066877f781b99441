package inspect

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/blackboardkernel/bk/internal/cmdline"
	"github.com/blackboardkernel/bk/store"
)

// ServeConfig is what `bk serve` runs the approvals console with.
type ServeConfig struct {
	// Store is the kernel store, open for writing: the console reads it
	// and appends the approvals a person gives.
	Store store.Store
	// Addr is the address to listen on (default 127.0.0.1:8080: this host
	// only).
	Addr string
	// Namespace limits the console to one namespace ("" for every one).
	Namespace string
	// IdentityHeader names the request header a reverse proxy sets to the
	// person it authenticated; TokenFile is a file of bearer tokens and
	// their names. Exactly one is given.
	IdentityHeader, TokenFile string
	// Hosts are the host names, besides an IP address, localhost and the
	// host of Addr, that requests may address the console by (the Host
	// header): the name a reverse proxy forwards, say. A request to any
	// other is refused, so that a page whose name was rebound to the
	// console's address (DNS rebinding) cannot use it.
	Hosts []string
	// Log is where the console says where it listens.
	Log io.Writer
}

// DefaultAddr is where `bk serve` listens unless --addr says otherwise:
// the loopback interface, so that the console is reachable from this host
// only.
const DefaultAddr = "127.0.0.1:8080"

// Option configures [Main].
type Option func(*env)

// WithServe gives `bk serve` the approvals console to run until ctx is
// done: package inspect/console's Run. This package cannot link the
// console itself, which is built on its reports, so a program that offers
// `bk serve` passes it (cmd/bk does); without it, `bk serve` fails.
func WithServe(serve func(ctx context.Context, cfg ServeConfig) error) Option {
	return func(e *env) { e.serveFunc = serve }
}

// everyInterface reports whether addr listens on every interface of the
// host (no host, 0.0.0.0 or ::) rather than on one address.
func everyInterface(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "" || ip != nil && ip.IsUnspecified()
}

// errNoServe is bk serve in a program that did not link the console.
var errNoServe = errors.New("serve: this program has no approvals console (no inspect.WithServe)")

func serveFlags(fs *flag.FlagSet, e *env) {
	fs.StringVar(&e.serve.Addr, "addr", DefaultAddr, "the address to listen on (the default is this host only)")
	fs.StringVar(&e.serve.IdentityHeader, "identity-header", "", "trust this request header, set by a reverse proxy, to name the approver")
	fs.StringVar(&e.serve.TokenFile, "token-file", "", `a file of "TOKEN NAME" lines: bearer tokens (or basic-auth passwords, with any user name) and the approvers they name; mode 0600`)
	fs.Func("hosts", "host names (comma-separated, NAME or NAME:PORT) the console may be addressed by besides an IP address, localhost and --addr's host", func(v string) error {
		for h := range strings.SplitSeq(v, ",") {
			if h = strings.TrimSpace(h); h != "" {
				e.serve.Hosts = append(e.serve.Hosts, h)
			}
		}
		return nil
	})
	e.check = func() error {
		if (e.serve.IdentityHeader == "") == (e.serve.TokenFile == "") {
			return cmdline.Usagef("give exactly one of --identity-header NAME and --token-file FILE: the console decides as a verified person, and will not start without one")
		}
		return nil
	}
}

func runServe(ctx context.Context, e *env, _ []string) error {
	if e.serveFunc == nil {
		return errNoServe
	}
	// The read-only store Main opened found a store of this version; the
	// console writes approvals, so it runs on a writable one.
	s, closeStore, err := e.openWritable(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	cfg := e.serve
	cfg.Store, cfg.Namespace, cfg.Log = s, e.namespace, e.out
	if everyInterface(cfg.Addr) {
		// Allowed (a container publishes its port so), but never silently.
		fmt.Fprintf(e.out, "bk serve: %s listens on every interface: whoever reaches this host on that port reaches the console; serve it behind TLS\n", cfg.Addr)
	}
	return e.serveFunc(ctx, cfg)
}
