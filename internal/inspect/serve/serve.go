package serve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/blackboardkernel/bk/inspect/console"
	"github.com/blackboardkernel/bk/internal/inspect"
)

// Run serves the console as `bk serve` does ([inspect.WithServe]): over
// cfg.Store, as the identity its header or token file gives, on cfg.Addr
// (default [inspect.DefaultAddr]), addressed by an IP address, localhost,
// the host name of cfg.Addr or one of cfg.Hosts ([console.Config.Hosts]), until ctx
// is done; then it stops taking
// requests and lets those under way finish (at most 5 s). A config with
// neither or both identities, or a bad token file, is [console.ErrInvalidConfig],
// and nothing listens.
func Run(ctx context.Context, cfg inspect.ServeConfig) error {
	var id console.Identity
	switch {
	case cfg.IdentityHeader != "" && cfg.TokenFile != "":
		return fmt.Errorf("%w: both an identity header and a token file", console.ErrInvalidConfig)
	case cfg.IdentityHeader != "":
		id = console.HeaderIdentity(cfg.IdentityHeader)
	case cfg.TokenFile != "":
		tokens, err := console.ReadTokens(cfg.TokenFile)
		if err != nil {
			return err
		}
		id = console.TokenIdentity(tokens)
	}
	addr := cmp.Or(cfg.Addr, inspect.DefaultAddr)
	hosts := cfg.Hosts
	if name, _, err := net.SplitHostPort(addr); err == nil && name != "" {
		hosts = append(hosts[:len(hosts):len(hosts)], name) // the name it listens on
	}
	c, err := console.New(console.Config{Store: cfg.Store, Identity: id, Namespace: cfg.Namespace, Hosts: hosts})
	if err != nil {
		return err
	}
	defer c.Close()
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	if cfg.Log != nil {
		fmt.Fprintf(cfg.Log, "bk serve: the approvals console is at http://%s/\n", ln.Addr())
	}
	srv := &http.Server{Handler: c, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err = srv.Shutdown(stop)
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}
