package pace

import (
	"net/http"
	"time"
)

// RetryAfter returns the delay the server asked for in resp, measured from
// now (the moment the response was received), and ok == false when the
// response names none. It reads the headers by the same rules as
// [Transport], first usable one first:
//
//  1. retry-after-ms, then x-ms-retry-after-ms: milliseconds (OpenAI, Azure
//     OpenAI, Azure Cosmos DB), a fraction allowed.
//  2. Retry-After (RFC 9110 §10.2.3): delay-seconds, or an HTTP-date in any
//     of the three forms of RFC 9110 §5.6.7. A date is waited for by both
//     clocks: the longer of the time from now and the time from the
//     response's Date header (§6.6.1), so a retry never leaves before the
//     server's instant. A date in the past gives 0, ok.
//  3. On a 429 or 503 response, or when the matching remaining count is 0:
//     the IETF RateLimit field's "t" (draft-ietf-httpapi-ratelimit-headers
//     §4.1), then RateLimit-Reset, then X-RateLimit-Reset, read as delta
//     seconds, epoch seconds or epoch milliseconds by their size; a reset
//     value of 1e14 or more (an epoch in microseconds or nanoseconds) is
//     malformed.
//
// A malformed header (a sign, a unit, a zone other than GMT) is skipped in
// favour of the next. The delay is never negative, and one too large for a
// time.Duration saturates at the largest Duration instead of overflowing,
// so it lands above any cap. RetryAfter applies no cap ([Transport] uses
// MaxRetryAfter, DefaultMaxRetryAfter by default) and does not judge the
// status: a delay on a 200 or a 301 is reported too; the caller decides
// what it means. A nil resp gives 0, false. It does not read the body and
// is safe for concurrent use.
func RetryAfter(resp *http.Response, now time.Time) (d time.Duration, ok bool) {
	d, _, ok = serverDelay(resp, now)
	return d, ok
}
