package console

import (
	"net"
	"strings"
)

// WithHosts adds host names the console may be addressed by: the Host a
// request names (as "name" for any port, or "name:port" for that port
// only), such as the name a reverse proxy in front of it forwards. The
// console always accepts an IP address and "localhost"; any other name
// must be listed. A request naming another host is refused (421) before
// its identity is read: a page of another site whose name was rebound to
// the console's address (DNS rebinding) is same-origin to itself, so the
// browser's cross-origin checks do not stop it, but it names its own host.
func WithHosts(hosts ...string) Option {
	return func(c *config) {
		for _, h := range hosts {
			if h = strings.ToLower(strings.TrimSpace(h)); h != "" {
				c.hosts = append(c.hosts, h)
			}
		}
	}
}

// hostAllowed reports whether a request's Host names the console: an IP
// address (a page cannot be rebound to one: its origin would be the
// address itself), localhost, or a host of [WithHosts].
func (c *Console) hostAllowed(host string) bool {
	if mutHost {
		return true
	}
	return c.hostServed(host)
}

func (c *Console) hostServed(host string) bool {
	host = strings.ToLower(host)
	name, _, err := net.SplitHostPort(host)
	if err != nil {
		name = host // no port
	}
	name = strings.TrimSuffix(strings.TrimPrefix(name, "["), "]")
	if name == "" {
		return false
	}
	if net.ParseIP(name) != nil || name == "localhost" {
		return true
	}
	for _, h := range c.cfg.hosts {
		if h == host || h == name {
			return true
		}
	}
	return false
}
