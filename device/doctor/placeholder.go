package doctor

import (
	"errors"
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// documentation are the address ranges kept for examples (RFC 5737,
// RFC 3849): no server of anyone's is there, so an example's config names
// them for the server a user must fill in.
var documentation = []netip.Prefix{
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("2001:db8::/32"),
}

var errPlaceholder = errors.New("an example's placeholder address (documentation range or example name), not a server")

// placeholder reports whether rawURL (a URL, or host:port) points at an
// example's stand-in: an address of the documentation ranges or a name
// under .example, .invalid or example.com/net/org (RFC 2606). The doctor
// says to fill it in and sends it nothing: on someone's LAN an address
// taken from an example may well be another machine.
func placeholder(rawURL string) bool {
	host := rawURL
	if u, err := url.Parse(rawURL); err == nil && u.Host != "" {
		host = u.Hostname()
	} else if h, _, err := net.SplitHostPort(rawURL); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if a, err := netip.ParseAddr(host); err == nil {
		for _, p := range documentation {
			if p.Contains(a.Unmap()) {
				return true
			}
		}
		return false
	}
	for _, name := range []string{"example", "invalid", "example.com", "example.net", "example.org"} {
		if host == name || strings.HasSuffix(host, "."+name) {
			return true
		}
	}
	return false
}
