package pace

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pacehttp/pace/internal/hostkey"
	"github.com/pacehttp/pace/internal/retrydecide"
	"github.com/pacehttp/pace/retry"
	"github.com/pacehttp/pace/throttle"
)

// Hosts maps a host to what applies to requests to it, for
// [Transport.Limits]: the [Limit] that paces them and, if set, its own
// retry policy ([Host]).
//
// A key is matched against the request's URL.Host as a URL compares hosts
// (RFC 3986 §6.2.2–6.2.3). Both are brought to one form:
//
//   - in lower case, without a trailing dot;
//   - an IPv6 literal in its canonical text (RFC 5952: "[0:0::1]" is
//     "[::1]");
//   - an internationalized name in the ASCII form net/http sends
//     ("äpi.example" is "xn--pi-uia.example"). That is IDNA2008, as
//     golang.org/x/net/idna's lookup profile maps it.
//   - without port 80 or 443.
//
// Those two ports do not count on either side, whatever the scheme. A key
// cannot know the scheme of the requests it will meet. So "api.example",
// "api.example:80" and "api.example:443" are one key. It matches
// https://api.example/v1, https://api.example:443/, http://api.example:80/,
// http://api.example:443/ and https://API.example./. It does not match
// https://api.example:8443/v1, which "api.example:8443" matches. Any other
// port must be the same. An empty port is no port, on either side, as URL
// normalisation has it. (RFC 3986 §3.2.3 allows a port of no digits;
// §6.2.3 drops it.) So the key "api.example:" is the key "api.example", and
// matches http://api.example:/. Two keys that name the same host so are an
// error ("API.example", "api.example.", "api.example:443", "api.example:").
// The key "*" is the default for every host not listed. Without it unlisted
// hosts are not paced. The zero Host paces nothing and retries as the
// Transport does. So {"*": {Limit: lim}, "internal.example": {}} exempts
// one host.
//
// A key that no URL.Host can ever equal is rejected, by
// [Transport.Validate] and every RoundTrip. The error is a [*ConfigError]
// naming Limits["key"]. Such keys are:
//
//   - an empty key, or a URL ("https://api.example");
//   - a key holding '/', '?', '#', '@', a space or a control character;
//   - a '*' anywhere but in the key "*" itself (there are no wildcard
//     patterns);
//   - a port that is not a decimal number up to 65535 ("api.example:abc").
//     An empty port is accepted, see above.
//   - an IPv6 address without brackets or without its closing bracket
//     ("[::1");
//   - an IPv6 zone written URL-escaped. URL.Host holds "[fe80::1%eth0]",
//     never "[fe80::1%25eth0]".
//   - a percent-escape, or another character net/url refuses in a host;
//   - a non-ASCII name that is no valid internationalized domain name.
//
// A request whose host no key lists, while a key names that host with
// another port or none, is reported once per key ([EventPortMismatch]).
// [Transport.Validate] checks the URLs of a job up front.
//
// The Limit is chosen by host, but its state is kept per request key (see
// [Transport].Key). With a Key that returns an API key, each API key gets
// its own bucket under its host's Limit.
//
// A Limit that carries an error, a negative MaxAttempts or a status that is
// not an error status is reported the same way. Field names the entry's
// setting, such as Limits["api.example"].Rate.N or
// Limits["api.example"].Statuses. The Transport compiles the map on first
// use and does not read it again. So changes made after that have no
// effect.
type Hosts map[string]Host

// Host is what applies to the requests to one host of [Hosts]: a payment
// API that must not be hammered and a flaky data API can differ in one
// client. Every zero field means the Transport's setting.
type Host struct {
	// Limit paces the host's requests; the zero Limit paces nothing.
	Limit Limit

	// MaxAttempts, if positive, replaces the Transport's Retry.MaxAttempts
	// for the host (the first attempt included; 1 disables retries). Zero
	// means the Transport's. Must not be negative.
	MaxAttempts int

	// Statuses, if non-nil, replaces the Transport's Retry.Statuses for
	// the host; a non-nil empty slice retries no status. Codes must be
	// error statuses, 400..599. The rest of the retry policy (idempotency,
	// transport errors, backoff, budget, Decide) is the Transport's.
	Statuses []int
}

// DefaultHost is the key of [Hosts] that applies to unlisted hosts.
const DefaultHost = "*"

// hostLimiters is the compiled form of Hosts: one entry per listed host,
// plus the default. A nil *hostLimiters paces nothing.
type hostLimiters struct {
	byHost map[string]*hostEntry   // host (hostkey form) -> entry
	byName map[string][]*hostEntry // host without its port -> the entries of that name
	def    *hostEntry              // for unlisted hosts; nil: the Transport's
}

// hostEntry is one compiled Host: its store and its retry settings, the
// Transport's filled in for zero fields.
type hostEntry struct {
	key         string           // the Hosts key, as written
	lim         throttle.Limiter // nil: not paced
	policy      *retrydecide.Executor
	maxAttempts int
	mismatched  atomic.Bool // an EventPortMismatch was emitted for the key
}

// compileHosts validates h and builds one entry per host, with policy and
// maxAttempts the Transport's.
func compileHosts(h Hosts, policy *retrydecide.Executor, maxAttempts int) (*hostLimiters, error) {
	if len(h) == 0 {
		return nil, nil
	}
	if err := validateHosts(h); err != nil {
		return nil, err
	}
	hl := &hostLimiters{byHost: make(map[string]*hostEntry, len(h)), byName: make(map[string][]*hostEntry, len(h))}
	for host, e := range h {
		he := &hostEntry{key: host, policy: policy, maxAttempts: orDefault(e.MaxAttempts, maxAttempts)}
		if e.Statuses != nil {
			p := *policy
			p.Policy.Statuses = slices.Clone(e.Statuses)
			he.policy = &p
		}
		if !e.Limit.IsZero() {
			k, err := NewKeyed(e.Limit, KeyedOptions{})
			if err != nil {
				return nil, limitErr(hostField(host), err)
			}
			he.lim = k
		}
		if host == DefaultHost {
			hl.def = he
		} else {
			lh, _ := hostkey.Key(host) // valid: validateHosts checked it
			hl.byHost[lh] = he
			name := hostkey.Name(lh)
			hl.byName[name] = append(hl.byName[name], he)
		}
	}
	for _, es := range hl.byName {
		slices.SortFunc(es, func(a, b *hostEntry) int { return cmp.Compare(a.key, b.key) })
	}
	return hl, nil
}

// forHost returns the entry for host (in the form requestHost returns), or
// nil when Hosts has neither the host nor a default; listed says whether
// a key names host itself.
func (hl *hostLimiters) forHost(host string) (e *hostEntry, listed bool) {
	if hl == nil {
		return nil, false
	}
	if e, ok := hl.byHost[host]; ok {
		return e, true
	}
	return hl.def, false
}

// near returns the entries whose key names host's name with another port
// or none, for a host no key lists, sorted by key.
func (hl *hostLimiters) near(host string) []*hostEntry {
	if hl == nil {
		return nil
	}
	return hl.byName[hostkey.Name(host)]
}

// portMismatch is the error of a request to host, which no key of Limits
// lists, while key names the same host with another port or none.
func portMismatch(key, host string) error {
	return configErr(hostField(key), host, "a request to this host matches no key, and this key names the host with another port or none (ports other than 80 and 443 count)")
}

// checkURLs returns, as a *ConfigError, the error of the first of urls
// whose host no key of hl lists while a key names that host with another
// port or none (see portMismatch). It also returns one for a URL that is no
// absolute URL.
func (hl *hostLimiters) checkURLs(urls []string) error {
	for i, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			return configErr(fmt.Sprintf("urls[%d]", i), nil, "not an absolute URL with a host")
		}
		host := hostkey.Of(u.Host)
		if _, listed := hl.forHost(host); listed {
			continue
		}
		if es := hl.near(host); len(es) > 0 {
			return portMismatch(es[0].key, host)
		}
	}
	return nil
}

// requestHost returns req's host in the form Hosts keys are matched in
// (see [Hosts]): URL.Host, or req.Host when the URL has none. It allocates
// only when the host is not in that form already (hostkey.Of), but for a
// port 80 or 443 to drop.
func requestHost(req *http.Request) string { return hostkey.Request(req) }

// validateHosts reports the first invalid entry of h as a *ConfigError
// naming it.
func validateHosts(h Hosts) error {
	seen := make(map[string]string, len(h))
	for host, e := range h {
		field := hostField(host)
		if reason := hostKeyProblem(host); reason != "" {
			return configErr(field, host, reason)
		}
		lh := host
		if host != DefaultHost {
			var err error
			if lh, err = hostkey.Key(host); err != nil {
				return configErr(field, host, err.Error())
			}
		}
		if err := e.Limit.Err(); err != nil {
			return limitErr(field, err)
		}
		if e.MaxAttempts < 0 {
			return configErr(field+".MaxAttempts", e.MaxAttempts, "must not be negative")
		}
		if err := policyErr(&retry.Policy{Statuses: e.Statuses}); err != nil {
			return limitErr(field, err)
		}
		if other, dup := seen[lh]; dup {
			return configErr(field, host, "the same host as "+strconv.Quote(other)+" (hosts compare as in a URL: case, a trailing dot, how an IPv6 address or an internationalized name is written, and ports 80 and 443 do not count)")
		}
		seen[lh] = host
	}
	return nil
}

// limitErr returns the error err of a Limit, or of a retry policy, as a
// *ConfigError for the setting field that holds it. It is err's own
// *ConfigError with field before its Field. For a part of All it names
// field and the part, the inner error quoted once.
func limitErr(field string, err error) error {
	if ce, ok := err.(*ConfigError); ok {
		return configErr(field+"."+ce.Field, ce.Value, ce.Reason)
	}
	if pe, ok := err.(*partError); ok {
		return configErr(field, nil, pe.detail())
	}
	return configErr(field, nil, strings.TrimPrefix(err.Error(), "pace: "))
}

// hostKeyProblem says why host can never equal a request's URL.Host, or
// returns "" when it can.
func hostKeyProblem(host string) string {
	switch {
	case host == "":
		return "empty host; use \"*\" for the default"
	case host == DefaultHost:
		return ""
	case strings.Contains(host, "://"):
		return "a URL, not a host: drop the scheme and any path"
	case strings.ContainsAny(host, "/?#@"):
		return "not a host: a URL.Host holds no '/', '?', '#' or '@'"
	case strings.Contains(host, "*"):
		return "wildcards are not supported; \"*\" alone is the default"
	}
	for i := 0; i < len(host); i++ {
		if c := host[i]; c <= ' ' || c == 0x7f {
			return "contains a space or control character"
		}
	}
	return ""
}

// hostField names the Limits entry of host in a ConfigError.
func hostField(host string) string { return "Limits[" + strconv.Quote(host) + "]" }

func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}
