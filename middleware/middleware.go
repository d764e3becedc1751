package middleware

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/netip"
	"net/textproto"
	"strconv"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/hdr"
)

// ErrNoKey is matched by the error [Options].OnKeyError receives when
// [Options].RequireKey is set and a request lacks the key header.
var ErrNoKey = errors.New("middleware: request has no rate-limit key")

// Middleware limits the requests a handler receives, per key, with one
// pace.Limit. Create it with [New] and wrap handlers with
// [Middleware.Handler]; one Middleware may wrap several handlers, which then
// share its limits. It is safe for concurrent use by multiple goroutines.
// A Middleware must come from New: the zero Middleware limits nothing and
// its handlers answer every request with an error (see Handler).
type Middleware struct {
	o         Options
	keyed     *pace.Keyed
	keyHeader string         // canonical form of o.KeyHeader
	trusted   []netip.Prefix // masked copies of o.TrustedProxies
	ipv6Bits  int
	policies  []policy
	policy    string // the RateLimit-Policy field, the same for every response
	errNoKey  error
}

// New returns a Middleware for o, or the first invalid setting of o as a
// [*pace.ConfigError] (which matches pace.ErrInvalidConfig). The Options are
// copied: changing o afterwards has no effect.
func New(o Options) (*Middleware, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	keyed, err := pace.NewKeyed(o.Limit, pace.KeyedOptions{MaxKeys: o.MaxKeys})
	if err != nil {
		return nil, err
	}
	m := &Middleware{o: o, keyed: keyed, ipv6Bits: o.IPv6Prefix}
	if m.ipv6Bits == 0 {
		m.ipv6Bits = DefaultIPv6Prefix
	}
	if o.KeyHeader != "" {
		m.keyHeader = textproto.CanonicalMIMEHeaderKey(o.KeyHeader)
		m.errNoKey = fmt.Errorf("%w: no %s header", ErrNoKey, m.keyHeader)
	}
	for _, p := range o.TrustedProxies {
		if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96) // addresses are unmapped too
		}
		m.trusted = append(m.trusted, p.Masked())
	}
	name := o.PolicyName
	if name == "" {
		name = DefaultPolicyName
	}
	// A key nobody has used has the limit's fresh quota; QuotaAt does not
	// start tracking it.
	m.policies = policiesOf(name, keyed.QuotaAt(time.Now(), ""))
	m.policy = policyField(m.policies)
	return m, nil
}

// Handler returns a handler that passes each request its key's limit
// admits to next, untouched, and refuses the others with 429 Too Many
// Requests. A nil next means http.DefaultServeMux, as for http.Server.
//
// Every request takes one unit of its key's limit if one is free now;
// requests never wait. An admitted request goes to next as it came: the
// same *http.Request, its method, URL, headers and body unread. The
// response fields RateLimit-Policy and RateLimit are already set, showing
// the quota left after it; next may still change or delete them. A refused
// request costs nothing, and does not reach next. It gets status 429 with
// Retry-After (whole seconds, rounded up, at least 1), RateLimit-Policy and
// RateLimit (r=0 for the policy that refused it). [Options].OnLimited
// writes it, if set. A request whose key cannot be found goes to
// [Options].OnKeyError (by default 400 Bad Request).
//
// On a Middleware not built by New (the zero value, or nil) Handler never
// panics. The handler it returns answers every request with 500 Internal
// Server Error and the one-line body "middleware: Middleware not created
// by middleware.New". It never calls next. So the mistake shows at the
// first request rather than as an unlimited server.
func (m *Middleware) Handler(next http.Handler) http.Handler {
	if m == nil || m.keyed == nil {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, errNotFromNew, http.StatusInternalServerError)
		})
	}
	if next == nil {
		next = http.DefaultServeMux
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, err := m.keyOf(r)
		if err != nil {
			m.keyError(w, r, err)
			return
		}
		q, ok := m.keyed.AdmitAt(time.Now(), key, 1)
		h := w.Header()
		if ok {
			if !m.o.OmitHeaders {
				h.Set(hdr.RateLimitPolicy, m.policy)
				h.Set(hdr.RateLimit, rateLimitField(m.policies, q, math.MaxInt64))
			}
			next.ServeHTTP(w, r)
			return
		}
		secs := retryAfter(q.Wait)
		h.Set(hdr.RetryAfter, strconv.FormatInt(secs, 10))
		if !m.o.OmitHeaders {
			h.Set(hdr.RateLimitPolicy, m.policy)
			h.Set(hdr.RateLimit, rateLimitField(m.policies, q, secs))
		}
		if m.o.OnLimited != nil {
			m.o.OnLimited(w, r, Refusal{Quota: q, RetryAfter: secondsDuration(secs)})
			return
		}
		http.Error(w, http.StatusText(http.StatusTooManyRequests), http.StatusTooManyRequests)
	})
}

// errNotFromNew is the body of every answer of a handler from a Middleware
// that New did not build.
const errNotFromNew = "middleware: Middleware not created by middleware.New"

// secondsDuration converts whole seconds to a Duration, saturating.
func secondsDuration(secs int64) time.Duration {
	if secs > int64(math.MaxInt64/time.Second) {
		return math.MaxInt64
	}
	return time.Duration(secs) * time.Second
}

// keyError answers a request whose key could not be found.
func (m *Middleware) keyError(w http.ResponseWriter, r *http.Request, err error) {
	if m.o.OnKeyError != nil {
		m.o.OnKeyError(w, r, err)
		return
	}
	msg := "no rate-limit key"
	if errors.Is(err, ErrNoKey) && m.keyHeader != "" {
		msg = "missing " + m.keyHeader + " header"
	}
	http.Error(w, msg, http.StatusBadRequest)
}
