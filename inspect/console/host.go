package console

import (
	"net"
	"strings"
)

// hostAllowed reports whether a request's Host names the console: an IP
// address (a page cannot be rebound to one: its origin would be the
// address itself), localhost, or one of [Config.Hosts].
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
