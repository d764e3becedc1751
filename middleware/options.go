package middleware

import (
	"fmt"
	"net/http"
	"net/netip"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/httptoken"
)

// DefaultPolicyName names the policy in the RateLimit header fields when
// [Options].PolicyName is empty.
const DefaultPolicyName = "default"

// DefaultIPv6Prefix is the length of the IPv6 prefix clients are keyed by
// when [Options].IPv6Prefix is 0. It is one /64, the smallest block a
// network usually hands to one customer (RFC 6177). Within it a client can
// pick a new address for every request.
const DefaultIPv6Prefix = 64

// Options configures a [Middleware]. Only Limit is required; every other
// zero field means a documented default. [New] checks the options once and
// reports what is wrong; nothing is checked, and nothing can fail, later at
// request time.
type Options struct {
	// Limit is applied to each key separately. For example,
	// pace.SlidingLog(pace.PerSecond(10)) allows at most 10 requests in any
	// second per client. Each request takes one unit. The middleware never
	// holds a request back: one that cannot pass at once is refused. So a
	// leaky-bucket pacer's Queue and MaxDelay have no effect here. Its Slack is
	// nginx's burst=B nodelay. The zero Limit (no limit) is a
	// [*pace.ConfigError] naming "Limit". A Limit carrying an error is
	// reported as is.
	Limit pace.Limit

	// Key, if set, returns the key a request is limited under, such as a user
	// ID from a verified token or a route. It replaces the built-in keys
	// (KeyHeader and the client address), and must be set alone: with
	// KeyHeader, TrustedProxies or IPv6Prefix set too the Options are
	// refused with a [*pace.ConfigError]. A non-nil
	// error refuses the request through OnKeyError. Key must be safe for
	// concurrent use, and must not modify the request. It may read the
	// request's context for values set by earlier middleware.
	Key func(*http.Request) (string, error)

	// KeyHeader, if set, keys requests by the value of this request header,
	// for example "X-API-Key", so that each API key has its own limit. The
	// value is hashed, with a seed chosen at random for each Middleware, and
	// then forgotten. It is never stored, logged, or written to a response. A
	// request without the header, or with an empty value, is keyed by its
	// client address, as if KeyHeader were unset, unless RequireKey is set.
	// The header name must be a valid HTTP field name, and not Host or
	// Transfer-Encoding, which net/http's server moves out of
	// Request.Header (key by r.Host with Key instead).
	//
	// Anyone can send any value. So keying by an unverified header lets a
	// client spread its requests over made-up keys. Use it behind
	// authentication, or key by a verified identity with Key.
	KeyHeader string

	// RequireKey refuses requests that lack KeyHeader (through OnKeyError,
	// with an error matching [ErrNoKey]) instead of keying them by client
	// address. It requires KeyHeader.
	RequireKey bool

	// TrustedProxies lists the addresses of the reverse proxies and load
	// balancers in front of the server, whose X-Forwarded-For entries can be
	// believed. Empty (the default) trusts nobody. The client address is then
	// the connection's peer (Request.RemoteAddr), and X-Forwarded-For is
	// ignored. That is right for a server that clients reach directly.
	//
	// When the peer is in TrustedProxies, the client is the right-most
	// X-Forwarded-For address that is not. Each proxy appends the address it
	// received the request from. So only entries appended by trusted proxies
	// can be believed. The left-most entry is whatever the client sent. A
	// client that could choose its key could send every request under a new
	// one, and never be limited. An entry that is not an IP address keys the
	// request by the trusted proxy that wrote it. Every prefix must be valid
	// (netip.Prefix.IsValid); use /32 or /128 for a single address. The
	// Forwarded header (RFC 7239) is not read; a Key function can read it.
	TrustedProxies []netip.Prefix

	// IPv6Prefix is how many leading bits of an IPv6 client address form
	// its key: 0 means [DefaultIPv6Prefix] (64), 128 keys each address
	// alone. It must be within [1, 128]. IPv4 addresses are keyed whole,
	// and IPv4-mapped IPv6 addresses as IPv4.
	IPv6Prefix int

	// PolicyName names the quota policy in the RateLimit and
	// RateLimit-Policy fields. Empty means [DefaultPolicyName]. For a limit
	// built by pace.All, each part is a policy of its own, named PolicyName
	// followed by "-1", "-2", … in the order of the parts. It must be
	// printable ASCII (0x20 to 0x7E), as the draft's String values are.
	PolicyName string

	// OmitHeaders leaves out the RateLimit and RateLimit-Policy fields, for
	// servers that would rather not disclose their limits (draft §8.2).
	// Refusals still carry Retry-After.
	OmitHeaders bool

	// MaxKeys caps the number of keys tracked at once, as
	// pace.KeyedOptions.MaxKeys. 0 means pace.DefaultMaxKeys (about a
	// million). Negative values are a [*pace.ConfigError]. Past the cap, a new
	// key makes the store forget the key that has used the fewest units of
	// its limit. So made-up keys cannot grow memory without bound, nor lock a
	// legitimate key out. Each made-up key gets a limit of its own, though. So
	// limit what a client cannot make up (its address) too. See
	// pace.KeyedOptions.MaxKeys for what eviction lets an attacker do.
	MaxKeys int

	// OnLimited, if set, writes the response to a refused request. When it is
	// called, the 429 fields are already set on w.Header(): Retry-After and,
	// unless OmitHeaders, RateLimit and RateLimit-Policy. It should write
	// status 429 (http.StatusTooManyRequests). It may add a body, for example
	// an RFC 9457 problem with the draft's "quota-exceeded" type. nil writes
	// 429 with a short plain-text body.
	OnLimited func(w http.ResponseWriter, r *http.Request, info Refusal)

	// OnKeyError, if set, writes the response when the key cannot be found:
	// Key returned an error, or RequireKey is set and the header is
	// missing (err matches [ErrNoKey]). nil writes 400 Bad Request with a
	// short plain-text body that never includes err's text.
	OnKeyError func(w http.ResponseWriter, r *http.Request, err error)
}

// Refusal describes a refused request to [Options].OnLimited.
type Refusal struct {
	// Quota is the key's standing at the refusal; Quota.Wait is the exact
	// time until one more request may pass.
	Quota pace.Quota

	// RetryAfter is the wait sent in Retry-After: Quota.Wait rounded up to
	// whole seconds, at least one second.
	RetryAfter time.Duration
}

// check returns the first invalid setting of o as a *pace.ConfigError.
func (o *Options) check() error {
	switch {
	case o.Limit.Err() != nil:
		return o.Limit.Err()
	case o.Limit.IsZero():
		return &pace.ConfigError{Field: "Limit", Value: o.Limit, Reason: "is required (the zero Limit means no limit)"}
	case o.Key != nil && o.KeyHeader != "":
		return &pace.ConfigError{Field: "KeyHeader", Value: o.KeyHeader, Reason: "must be empty when Key is set"}
	case o.Key != nil && len(o.TrustedProxies) > 0:
		return &pace.ConfigError{Field: "TrustedProxies", Value: o.TrustedProxies, Reason: "must be empty when Key is set (Key replaces the client address)"}
	case o.Key != nil && o.IPv6Prefix != 0:
		return &pace.ConfigError{Field: "IPv6Prefix", Value: o.IPv6Prefix, Reason: "must be 0 when Key is set (Key replaces the client address)"}
	case o.KeyHeader != "" && !httptoken.Valid(o.KeyHeader):
		return &pace.ConfigError{Field: "KeyHeader", Value: o.KeyHeader, Reason: "is not a valid HTTP field name"}
	case movedOut(o.KeyHeader):
		return &pace.ConfigError{Field: "KeyHeader", Value: o.KeyHeader, Reason: "names a field net/http moves out of Request.Header (use Key with r.Host)"}
	case o.RequireKey && o.KeyHeader == "":
		return &pace.ConfigError{Field: "RequireKey", Value: o.RequireKey, Reason: "needs KeyHeader"}
	case o.IPv6Prefix < 0 || o.IPv6Prefix > 128:
		return &pace.ConfigError{Field: "IPv6Prefix", Value: o.IPv6Prefix, Reason: "must be within [1, 128], or 0 for the default"}
	case !isPrintable(o.PolicyName):
		return &pace.ConfigError{Field: "PolicyName", Value: o.PolicyName, Reason: "must be printable ASCII"}
	case o.MaxKeys < 0:
		return &pace.ConfigError{Field: "MaxKeys", Value: o.MaxKeys, Reason: "must not be negative"}
	}
	for i, p := range o.TrustedProxies {
		if !p.IsValid() {
			return &pace.ConfigError{Field: fmt.Sprintf("TrustedProxies[%d]", i), Value: p, Reason: "is not a valid prefix"}
		}
	}
	return nil
}

// isPrintable reports whether s holds only printable ASCII.
func isPrintable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// movedOut reports whether a request field named name never reaches
// Request.Header on a server: net/http moves Host to Request.Host and
// Transfer-Encoding to Request.TransferEncoding.
func movedOut(name string) bool {
	switch http.CanonicalHeaderKey(name) {
	case "Host", "Transfer-Encoding":
		return true
	}
	return false
}
