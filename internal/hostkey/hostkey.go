// Package hostkey normalizes hosts. The hosts a user lists ([pace.Hosts]
// keys) and the hosts requests go to meet in one form. This is the one
// place where that form is decided:
//
//   - lower case (RFC 3986 §3.2.2: the host is case-insensitive);
//   - without the trailing dot of a fully qualified name (RFC 1034 §3.1:
//     "api.example." is "api.example");
//   - an IPv6 literal in its canonical text (RFC 5952, as net/netip
//     formats it): "[0:0::1]" is "[::1]";
//   - an internationalized name in its ASCII (punycode) form, as net/http
//     sends it (the IDNA2008 lookup profile of golang.org/x/net/idna, UTS
//     #46): "äpi.example" is "xn--pi-uia.example";
//   - without port 80 or 443, whatever the scheme. A key cannot know the
//     scheme of the requests it will meet. So the default ports of http and
//     https both name the host itself, on either side. "api.example",
//     "api.example:80" and "api.example:443" are one host; any other port
//     counts. An empty port ("api.example:") is no port (RFC 3986 §3.2.3).
//
// [Of] is the request side and allocates nothing for a host already in that
// form; [Key] is the listing side: it also rejects what no URL.Host can be.
package hostkey

import (
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// Of returns the normal form of hostport, a URL.Host (host, or host:port;
// an IPv6 literal in brackets). It allocates only when hostport is not in
// normal form, but not for a dropped port. That is upper-case or non-ASCII
// letters, a trailing dot before a kept port, or an IPv6 literal not in
// canonical text (or with a zone). A host it cannot make sense of is only
// lower-cased.
func Of(hostport string) string {
	name, port := splitPort(hostport)
	n := normName(name)
	p := normPort(port)
	if p == "" || p == ":" || p == ":80" || p == ":443" {
		return n
	}
	if n == name && p == port {
		return hostport
	}
	return n + p
}

// normPort returns port (":" and digits, or "") without leading zeros, as
// net/http dials it: ":044989" is ":44989", ":080" is ":80", ":00" is ":0".
func normPort(port string) string {
	i := 1
	for i < len(port)-1 && port[i] == '0' {
		i++
	}
	if i == 1 {
		return port
	}
	return ":" + port[i:]
}

// Request returns the normal form of req's host: URL.Host, or req.Host when
// the URL has none (a server-side request).
func Request(req *http.Request) string {
	h := req.Host
	if req.URL != nil && req.URL.Host != "" {
		h = req.URL.Host
	}
	return Of(h)
}

// Key returns the normal form of key, a host a user lists. Or it returns
// an error saying why no URL.Host can ever be key:
//
//   - an IPv6 literal without its closing bracket, or not an IPv6 address;
//   - an IPv6 address without brackets;
//   - an IPv6 zone written URL-escaped ("%25"). URL.Host holds it
//     unescaped, "[fe80::1%eth0]".
//   - a port that is not decimal or above 65535, or no host before the
//     port;
//   - a character or percent-escape that net/url does not leave in a
//     URL.Host;
//   - a name that is not a valid internationalized domain name.
//
// The caller checks what is particular to its own keys (an empty key,
// wildcards).
func Key(key string) (string, error) {
	name, port := splitPort(key)
	switch {
	case strings.HasPrefix(key, "["):
		end := strings.IndexByte(key, ']')
		if end < 0 {
			return "", errors.New("an IPv6 literal without its closing ']'")
		}
		if rest := key[end+1:]; rest != "" && rest[0] != ':' {
			return "", errors.New("text after the IPv6 literal's ']' that is no port")
		}
		lit := key[1:end]
		if strings.Contains(lit, "%25") {
			return "", errors.New("an IPv6 zone is written unescaped, as URL.Host holds it: [fe80::1%eth0], not [fe80::1%25eth0]")
		}
		if a, err := netip.ParseAddr(lit); err != nil || !a.Is6() {
			return "", errors.New("not an IPv6 address in brackets")
		}
	case strings.ContainsAny(key, "[]"):
		return "", errors.New("brackets only go around an IPv6 address")
	case strings.Count(key, ":") > 1:
		return "", errors.New("an IPv6 address goes in brackets, as in a URL: [::1]")
	case name == "":
		return "", errors.New("no host before the port")
	default:
		if err := checkName(name); err != nil {
			return "", err
		}
	}
	if len(port) > 1 {
		p, err := strconv.ParseUint(port[1:], 10, 64)
		switch {
		case err != nil && !errors.Is(err, strconv.ErrRange):
			return "", errors.New("the port is not a decimal number")
		case err != nil || p > 65535:
			return "", errors.New("the port is above 65535")
		}
	}
	return Of(key), nil
}

// checkName reports why name (a host without port or brackets) is no
// URL.Host. net/url refuses it, or holds it otherwise (a percent-escape is
// decoded). Or it is no valid internationalized domain name.
func checkName(name string) error {
	u, err := url.Parse("http://" + name + "/")
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return errors.New("no URL has this host: " + err.Error())
	}
	if u.Host != name {
		return errors.New("a URL.Host holds no percent-escapes: write the character itself")
	}
	if !isASCII(name) {
		if _, err := idna.Lookup.ToASCII(strings.TrimSuffix(name, ".")); err != nil {
			return errors.New("not a valid internationalized domain name: " + err.Error())
		}
	}
	return nil
}

// normName returns the normal form of name, a host without its port (an
// IPv6 literal in brackets).
func normName(name string) string {
	if len(name) > 2 && name[0] == '[' && name[len(name)-1] == ']' {
		return normLiteral(name)
	}
	if len(name) > 1 && name[len(name)-1] == '.' {
		name = name[:len(name)-1]
	}
	upper := false
	for i := 0; i < len(name); i++ {
		if c := name[i]; c >= utf8.RuneSelf {
			if a, err := idna.Lookup.ToASCII(name); err == nil {
				return a // the lookup profile maps upper case too
			}
			return strings.ToLower(name)
		} else if 'A' <= c && c <= 'Z' {
			upper = true
		}
	}
	if upper {
		return strings.ToLower(name)
	}
	return name
}

// normLiteral returns lit, an IPv6 literal in brackets, in canonical text,
// or lower-cased when it is no IP address.
func normLiteral(lit string) string {
	a, err := netip.ParseAddr(lit[1 : len(lit)-1])
	if err != nil {
		return strings.ToLower(lit)
	}
	if z := a.Zone(); z != "" {
		a = a.WithZone(strings.ToLower(z))
	}
	var buf [64]byte
	b := append(buf[:0], '[')
	b = a.AppendTo(b)
	b = append(b, ']')
	if string(b) == lit {
		return lit
	}
	return string(b)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// Name returns hostport without its port: "api.example:8443" is
// "api.example", "[::1]:8080" is "[::1]". It allocates nothing.
func Name(hostport string) string {
	name, _ := splitPort(hostport)
	return name
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
