package middleware

import (
	"net/http"
	"net/netip"
	"strings"
)

// Keys are namespaced so that one kind can never reach another's limit: an
// API key spelled like a client address must not drain that address's
// limit.
const (
	addrKeyPrefix   = "a" // a client address (or prefix), or RemoteAddr as is
	headerKeyPrefix = "k" // the value of Options.KeyHeader
)

// keyOf returns the key r is limited under.
func (m *Middleware) keyOf(r *http.Request) (string, error) {
	switch {
	case m.o.Key != nil:
		return m.o.Key(r)
	case m.keyHeader != "":
		if v := r.Header.Get(m.keyHeader); v != "" {
			return headerKeyPrefix + v, nil
		}
		if m.o.RequireKey {
			return "", m.errNoKey
		}
	}
	return m.addrKey(r), nil
}

// addrKey keys r by its client address: the peer's, or with TrustedProxies
// the one the proxies recorded, reduced to its IPv6 prefix. A RemoteAddr
// that holds no IP address (a Unix socket) is used as is.
func (m *Middleware) addrKey(r *http.Request) string {
	peer, ok := parseHostPort(r.RemoteAddr)
	if !ok {
		return addrKeyPrefix + r.RemoteAddr
	}
	client := peer
	if len(m.trusted) > 0 {
		client = m.forwardedClient(peer, r.Header.Values("X-Forwarded-For"))
	}
	if client.Is6() {
		client = netip.PrefixFrom(client, m.ipv6Bits).Masked().Addr()
	}
	var buf [64]byte // room for the longest IPv6 text form
	return string(client.AppendTo(append(buf[:0], addrKeyPrefix...)))
}

// forwardedClient returns the client address behind the trusted proxies.
// Each proxy appends the address it received the request from, so reading
// X-Forwarded-For from the right, while the address at hand is a trusted
// proxy, the entry before it is one that proxy wrote. The first address
// that is not a trusted proxy is the client. Anything further left was
// written by the client or by proxies nobody vouches for, and may be forged.
// An entry that is not an IP address stops the walk at the proxy that wrote
// it, so such requests share that proxy's limit: stricter, never looser.
func (m *Middleware) forwardedClient(peer netip.Addr, lines []string) netip.Addr {
	client := peer
	for i := len(lines) - 1; i >= 0; i-- {
		rest := lines[i]
		for {
			if !m.isTrusted(client) {
				return client
			}
			j := strings.LastIndexByte(rest, ',') // -1: the line's last entry
			a, ok := parseHostPort(strings.Trim(rest[j+1:], " \t"))
			if !ok {
				return client
			}
			client = a
			if j < 0 {
				break
			}
			rest = rest[:j]
		}
	}
	return client // every hop was a trusted proxy
}

// isTrusted reports whether a is the address of a trusted proxy.
func (m *Middleware) isTrusted(a netip.Addr) bool {
	for _, p := range m.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// parseHostPort parses an IP address with an optional port ("192.0.2.1",
// "192.0.2.1:443", "2001:db8::1", "[2001:db8::1]:443", "[2001:db8::1]"),
// dropping any zone and unmapping IPv4-mapped IPv6 addresses, so that one
// client has one spelling.
func parseHostPort(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		ap, perr := netip.ParseAddrPort(s)
		switch {
		case perr == nil:
			a = ap.Addr()
		case len(s) > 2 && s[0] == '[' && s[len(s)-1] == ']':
			if a, err = netip.ParseAddr(s[1 : len(s)-1]); err != nil {
				return netip.Addr{}, false
			}
		default:
			return netip.Addr{}, false
		}
	}
	return a.WithZone("").Unmap(), true
}
