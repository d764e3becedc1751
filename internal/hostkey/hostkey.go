// Package hostkey normalizes hosts the way a URL compares them, so that the
// hosts a user lists ([pace.Hosts] keys) and the hosts requests go to meet
// in one form: lower case (RFC 3986 §3.2.2: the host is case-insensitive),
// without the trailing dot of a fully qualified name (RFC 1034 §3.1:
// "api.example." is "api.example"), and without the scheme's default port
// (RFC 3986 §6.2.3: "http://api.example:80/" is "http://api.example/"; 80
// for http and ws, 443 for https and wss).
package hostkey

import (
	"net/http"
	"strings"
	"unicode/utf8"
)

// Of returns the normal form of hostport (a URL.Host: host, or host:port,
// IPv6 literals in brackets) reached with scheme ("http", "https", …, in
// lower case as net/url gives it). An empty scheme means hostport is a key
// a user listed, with no scheme to tell: then both 80 and 443 are taken as
// a default port and dropped. Of allocates only when the host has an
// upper-case or non-ASCII letter, or a trailing dot before a kept port.
func Of(hostport, scheme string) string {
	h := hostport
	for i := 0; i < len(h); i++ {
		if c := h[i]; c >= utf8.RuneSelf || 'A' <= c && c <= 'Z' {
			h = strings.ToLower(h)
			break
		}
	}
	name, port := splitPort(h)
	if port != "" && port != ":" && !defaultPort(port[1:], scheme) {
		if strings.HasSuffix(name, ".") && len(name) > 1 {
			return name[:len(name)-1] + port
		}
		return h
	}
	if len(name) > 1 && strings.HasSuffix(name, ".") {
		name = name[:len(name)-1]
	}
	return name
}

// Request returns the normal form of req's host: URL.Host, or req.Host when
// the URL has none (a server-side request), with the URL's scheme.
func Request(req *http.Request) string {
	h, scheme := req.Host, ""
	if req.URL != nil {
		scheme = req.URL.Scheme
		if req.URL.Host != "" {
			h = req.URL.Host
		}
	}
	if scheme == "" {
		scheme = "http"
	}
	return Of(h, scheme)
}

// splitPort splits h into its host and its ":port" (with the colon; ":"
// alone for an empty port, which RFC 3986 §3.2.3 allows and means the
// default). An IPv6 literal's colons are inside brackets; a host with
// several colons and no brackets has no port.
func splitPort(h string) (name, port string) {
	i := strings.LastIndexByte(h, ':')
	if i < 0 {
		return h, ""
	}
	if strings.HasPrefix(h, "[") {
		if j := strings.LastIndexByte(h, ']'); j > i || j != i-1 {
			return h, "" // a bracketed literal without a port
		}
	} else if strings.IndexByte(h, ':') != i {
		return h, "" // a bare IPv6 address
	}
	return h[:i], h[i:]
}

// defaultPort reports whether port is scheme's default port, or for an
// empty scheme one of the two usual defaults.
func defaultPort(port, scheme string) bool {
	switch port {
	case "80":
		return scheme == "" || scheme == "http" || scheme == "ws"
	case "443":
		return scheme == "" || scheme == "https" || scheme == "wss"
	}
	return false
}
