// Package retryrule holds the rules of HTTP retries that several packages
// of pace share, in one place: which requests are safe to send twice
// (idempotent methods, idempotency keys), which response statuses are
// retried and which are a throttle, how a discarded body is drained, and
// which callers take their throttles back to wait them out themselves.
// The root Transport's retries, package batch's requeues and write-ahead
// journal, and package asynqpace all read them here.
package retryrule

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/pacehttp/pace/internal/hdr"
)

// IdempotentMethod reports whether m is idempotent per RFC 9110 §9.2.2: GET, HEAD,
// OPTIONS, TRACE, PUT and DELETE ("" means GET in net/http). Method names
// are case-sensitive (RFC 9110 §9.1).
func IdempotentMethod(m string) bool {
	switch m {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace,
		http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// WantsKey reports whether a request of method m needs an idempotency key
// to be safe to send twice, and so gets one when keys are added: POST and
// PATCH.
func WantsKey(m string) bool { return m == http.MethodPost || m == http.MethodPatch }

// IdempotencyKey returns the idempotency key h carries under name, a canonical header
// name; "" means hdr.IdempotencyKey, and then hdr.XIdempotencyKey counts
// too, as in net/http. ok reports whether the header counts: it has a
// non-empty first value, or it is present with a nil value (net/http's way
// to mark a request idempotent without sending the header). key is the
// first value, "" for a nil one.
func IdempotencyKey(h http.Header, name string) (key string, ok bool) {
	if name != "" {
		return first(h, name)
	}
	if key, ok = first(h, hdr.IdempotencyKey); key != "" {
		return key, true
	}
	if k, xok := first(h, hdr.XIdempotencyKey); xok {
		return k, true
	}
	return "", ok
}

func first(h http.Header, name string) (string, bool) {
	vs, present := h[name]
	switch {
	case !present:
		return "", false
	case vs == nil:
		return "", true
	case len(vs) > 0 && vs[0] != "":
		return vs[0], true
	}
	return "", false
}

// DerivedKey returns the idempotency key of item id in scope:
//
//	"pace-" + scope + "-" + the first 24 hex digits of SHA-256(scope + "\x00" + id)
//
// Package batch's scope is its run ID; package asynqpace's is "asynq",
// with the queue and task ID as id.
func DerivedKey(scope, id string) string {
	sum := sha256.Sum256([]byte(scope + "\x00" + id))
	return "pace-" + scope + "-" + hex.EncodeToString(sum[:12])
}

// EnsureKey gives req the key derive returns when its method wants one
// ([WantsKey]) and it carries none. A header present with an empty
// value opts out: EnsureKey removes it and adds none. When derive returns
// "", EnsureKey adds none either. It returns the key req then carries, "" for
// none. req.Header may be nil.
func EnsureKey(req *http.Request, derive func() string) string {
	key, _ := IdempotencyKey(req.Header, "")
	if vs, ok := req.Header[hdr.IdempotencyKey]; ok && key == "" && len(vs) > 0 {
		delete(req.Header, hdr.IdempotencyKey) // opted out
	} else if key == "" && WantsKey(req.Method) {
		if key = derive(); key == "" {
			return ""
		}
		if req.Header == nil {
			req.Header = make(http.Header)
		}
		req.Header.Set(hdr.IdempotencyKey, key)
	}
	return key
}

// DefaultStatuses returns the statuses retried by default, in a new slice: 408,
// 429, 500, 502, 503 and 504 (see retry.DefaultStatuses).
func DefaultStatuses() []int {
	return []int{
		http.StatusRequestTimeout,
		http.StatusTooManyRequests,
		http.StatusInternalServerError,
		http.StatusBadGateway,
		http.StatusServiceUnavailable,
		http.StatusGatewayTimeout,
	}
}

// StatusRetried reports whether code is retried under list, a retry.Policy's
// Statuses: nil means DefaultStatuses, a non-nil empty list retries no status.
func StatusRetried(list []int, code int) bool {
	if list != nil {
		return slices.Contains(list, code)
	}
	switch code {
	case http.StatusRequestTimeout, http.StatusTooManyRequests,
		http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// StatusesOf returns the Statuses that rt, a *pace.Transport, retries for req (its
// host's, per pace.Hosts, else its Retry's), and ok false when rt is no
// *pace.Transport. Package pace sets it when it is initialized; it is
// read-only after that and safe for concurrent use.
var StatusesOf = func(rt http.RoundTripper, req *http.Request) (list []int, ok bool) { return nil, false }

// Throttle reports whether an answer with status code and, if fromServer,
// a server delay is a throttle: a 429 Too Many Requests (RFC 6585 §4), or a
// 503 Service Unavailable (RFC 9110 §15.6.4) or 403 Forbidden that names
// when to come back. A throttle pauses its whole key. It is the one test
// of pace for "the server is throttling": a 503 without a delay is an
// outage, and a 403 without one a refusal. GitHub answers its rate limits
// with a 403 and Retry-After, or x-ratelimit-remaining: 0 and
// x-ratelimit-reset (docs.github.com, "Rate limits for the REST API").
func Throttle(code int, fromServer bool) bool {
	switch code {
	case http.StatusTooManyRequests:
		return true
	case http.StatusServiceUnavailable, http.StatusForbidden:
		return fromServer
	}
	return false
}

// ThrottleStatus reports whether code is 429 Too Many Requests (RFC 6585
// §4) or 503 Service Unavailable (RFC 9110 §15.6.4), the statuses that can
// be a throttle (Throttle; a 503 only with a delay). Reset headers count
// as a delay on these statuses, and either one without a usable delay
// starts the request's default backoff at
// retry.DefaultThrottleBackoffInitial rather than retry.DefaultBackoffInitial.
func ThrottleStatus(code int) bool {
	return code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable
}

// DrainMax is the most of a body that Drain reads: 64 KiB. Reading a short error
// body to its end lets net/http put the connection back in its idle pool;
// a longer one is not worth reading, and closing it costs only a new
// connection.
const DrainMax = 64 << 10

// Drain reads at most DrainMax bytes of body, then closes it. A nil body is
// ignored. Read and close errors are dropped: the body is being discarded.
func Drain(body io.ReadCloser) {
	if body == nil {
		return
	}
	_, _ = io.CopyN(io.Discard, body, DrainMax)
	_ = body.Close()
}

type handBackKey struct{}

// Pauses is the pause schedule of a caller that waits out throttles in
// its own line (package batch's Options.Backoff and MaxBackoff). First is
// a key's first pause after a throttle without a delay, doubled by each
// strike; Max caps every pause of the key, the server's delay included.
// Zero fields keep pace.Transport's own.
type Pauses struct{ First, Max time.Duration }

// WithHandBack returns ctx marked for a caller that keeps its own line of
// waiting work (package batch's HTTP, package asynqpace). pace.Transport
// hands the throttles of such a request back at once instead of sleeping
// on them: a request of a paused key is refused, nothing sent, and a
// throttled answer is returned, not retried. The caller then waits out the
// pause in its own line, holding none of its concurrency slots. The pause
// the Transport sets on the key after a throttle of such a request follows
// p, so that the Transport does not refuse the caller's retry after the
// caller's own pause has ended.
func WithHandBack(ctx context.Context, p Pauses) context.Context {
	return context.WithValue(ctx, handBackKey{}, p)
}

// HandBack returns the Pauses of a ctx marked by [WithHandBack], and
// whether it is marked.
func HandBack(ctx context.Context) (Pauses, bool) {
	p, ok := ctx.Value(handBackKey{}).(Pauses)
	return p, ok
}
