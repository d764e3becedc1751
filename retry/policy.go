package retry

import (
	"github.com/cenkalti/backoff/v4"

	"github.com/pacehttp/pace/internal/hdr"
	"github.com/pacehttp/pace/internal/retryrule"
)

// DefaultMaxAttempts is the default number of attempts per request, the
// first one included: 3 means the request is sent at most three times, so at
// most two retries. It is the AWS SDKs' standard-mode default.
const DefaultMaxAttempts = 3

// DefaultIdempotencyHeader is the request header whose presence makes a
// POST or PATCH safe to retry, and the one Policy.AddIdempotencyKey sets
// (draft-ietf-httpapi-idempotency-key-header; Stripe, PayPal, Adyen and
// others use it).
const DefaultIdempotencyHeader = hdr.IdempotencyKey

// DefaultStatuses returns the response status codes retried by default, in
// a new slice. They are 408 Request Timeout, 429 Too Many Requests, 500
// Internal Server Error, 502 Bad Gateway, 503 Service Unavailable and 504
// Gateway Timeout. Some statuses mean the request itself is wrong, or will
// not work however often it is sent. They are not retried: 400, 401, 403,
// 404, 405, 409, 422, and the permanent 5xx. Those are 501 Not Implemented,
// 505 HTTP Version Not Supported, 506, 510 and 511 (aws/aws-sdk-go#1819).
func DefaultStatuses() []int { return retryrule.DefaultStatuses() }

// Policy is a Transport's retry configuration (pace.Transport's Retry
// field). It says how many attempts a request gets, and which statuses and
// transport errors are retried. It says which requests are safe to send
// again, the backoff between attempts and the per-key retry budget. Its
// zero value is the documented default. A
// [github.com/pacehttp/pace.Host] may replace MaxAttempts and Statuses for
// one host. The Transport copies its Policy on first use; do not change it
// after that. The Transport calls Decide and NewBackOff from the goroutines
// of concurrent requests.
//
// What is retried by default:
//
//   - Responses with a status in Statuses (DefaultStatuses when nil). A 403
//     that names a delay is retried when Statuses holds 429: it is a
//     throttle (see pace.Throttled).
//   - Transport errors that mean the request did not complete: connection
//     refused or reset, an unexpected EOF, a timeout that is not the
//     request context's deadline, an HTTP/2 GOAWAY, a closed idle
//     connection. Never a cancelled or expired request context, a TLS or
//     certificate error, an invalid URL or scheme, too many redirects, or
//     an error pace does not recognize.
//   - Only requests that are safe to send twice. Those are the idempotent
//     methods of RFC 9110 §9.2.2 (GET, HEAD, OPTIONS, TRACE, PUT, DELETE),
//     or any method carrying the idempotency header. With
//     RetryNonIdempotent, any method is. A POST without a key is not
//     retried after a transport error, because the server may have
//     processed it (digitalocean/netbox-ip-controller#14). The exception is
//     an error that proves nothing was sent (the connection was refused or
//     never dialled). That is retried for every method.
//   - A server hint wins over all of the above. An error response (4xx,
//     5xx) with "Stripe-Should-Retry: false" is never retried. One with
//     "true" is retried whatever its status, if the method is safe to send
//     again.
//   - A success or a redirect (a status below 400) is never retried. The
//     Transport's ErrorOnGiveUp never turns it into an error. Decide
//     returning true on one is ignored. Only Decide's Fail ends such a call
//     with an error.
//
// The Transport also needs a replayable body (see
// pace.DefaultMaxBufferedBody), attempts left and budget left; Decide
// cannot lift those limits.
type Policy struct {
	// MaxAttempts is the number of attempts per request, the first
	// included. Zero means DefaultMaxAttempts; 1 disables retries; it must
	// not be negative. A pace.Host's own MaxAttempts replaces it for that
	// host.
	MaxAttempts int

	// Statuses lists the response status codes to retry. Nil means
	// DefaultStatuses(); a non-nil empty slice retries no status.
	// Codes must be error statuses, 400..599: a list holding a 2xx or 3xx
	// is refused (a *pace.ConfigError), since a success or a redirect is
	// never retried. A pace.Host's own Statuses replace it for that host.
	Statuses []int

	// IdempotencyHeader names the request header whose presence makes a
	// non-idempotent request (POST, PATCH) safe to retry: the server
	// deduplicates attempts that carry the same key. Empty means
	// DefaultIdempotencyHeader, and then X-Idempotency-Key also counts, as
	// in net/http. The header counts when it has a non-empty value, or when
	// it is present with a nil value (net/http's way to mark a request
	// idempotent without sending the header). A name that is not a header
	// name (an RFC 9110 §5.6.2 token) is refused.
	IdempotencyHeader string

	// RetryNonIdempotent, if true, retries requests of every method as if
	// they were idempotent, including after a transport error. Use it only
	// when the server tolerates duplicates.
	RetryNonIdempotent bool

	// AddIdempotencyKey, if true, gives each POST and PATCH request that lacks
	// the idempotency header a random one (a UUIDv4, from crypto/rand). It is
	// set before the first attempt, the same on every attempt. So such
	// requests become safe to retry. The caller's request is not modified; the
	// key is set on pace's copy.
	AddIdempotencyKey bool

	// NewBackOff returns the backoff schedule for one request, used when the
	// server gives no delay. Schedules are stateful, so each request gets its
	// own. If nil, the schedule starts at DefaultBackoffInitial (100ms). After
	// a 429 or 503 without a delay it starts at DefaultThrottleBackoffInitial
	// (1s). It doubles up to DefaultBackoffMax (20s). A 429 without a delay
	// pauses its whole key for DefaultThrottlePause (5s). That pause
	// doubles with each consecutive one: a throttle of a request sent after the
	// key's latest pause began, with no other answer in between. On a key a
	// configured limit paces, the first one pauses it for MinThrottlePause
	// (50ms) instead, and lowers its rate (docs/pacing.md, "Slowing down by
	// itself"). All of these are capped at the Transport's MaxRetryAfter.
	//
	// A schedule from NewBackOff is reset before use. Its waits are jittered
	// and kept within (0, MaxRetryAfter]. backoff.Stop (or a nil schedule) ends
	// the retries. But a 429 without a delay pauses the request's whole key
	// for the schedule's next wait, never less than
	// DefaultThrottleBackoffInitial (1s). So its retry waits that long too. A
	// 503 or 500 without a delay waits the schedule's wait. NewBackOff is
	// called from the goroutines of concurrent requests, so it must be safe for
	// concurrent use.
	NewBackOff func() backoff.BackOff

	// Jitter randomizes backoff waits: FullJitter (the zero value),
	// EqualJitter, DecorrelatedJitter or NoJitter; any other value is
	// refused. It never makes a wait longer than the cap or zero.
	// Server-given delays are never jittered.
	Jitter Jitter

	// Budget limits retries per key to a share of recent traffic: see
	// [Budget]. The zero value means the default budget.
	Budget Budget

	// Decide, if non-nil, is called after every attempt, and returns whether
	// to retry. It gets pace's default decision in c.Retry and its reason in
	// c.Reason. true on a response whose status is below 400 (a success or a
	// redirect) is ignored: such a response is never retried. Decide may set
	// c.Reason to explain its choice to observers. It may read the first bytes
	// of the response body with c.Body; the caller still gets the whole body.
	// It may set c.Wait to the delay the server named in the body. It may set
	// c.Fail to end the call with an error of its own (see [Check];
	// go-retryablehttp's CheckRetry returning an error). It must not read
	// c.Response.Body directly, close it, nor modify c.Request. It is called
	// from the goroutine running RoundTrip, and must be safe for concurrent
	// use when the Transport is.
	Decide func(c *Check) bool
}
