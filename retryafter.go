package pace

import (
	"github.com/pacehttp/pace/internal/hdr"
	"github.com/pacehttp/pace/internal/retryrule"
	"net/http"
	"time"
)

// DefaultMaxRetryAfter is the default cap on a delay the server asks for
// (Retry-After and the other headers read by the Transport). A server-given
// delay above the cap is not slept. The response goes back to the caller
// at once, unretried. A retry before the server's instant is certain to
// fail, and a longer sleep would park the caller
// (hashicorp/go-retryablehttp#247). A delay too large to represent is the
// largest time.Duration, so it always lands above any cap.
const DefaultMaxRetryAfter = 5 * time.Minute

// RetryAfter returns the delay the server asked for in resp, counted from
// now (the moment the response was received). ok is false when the
// response names none. It reads the headers by the same rules as
// [Transport], first usable one first:
//
//  1. retry-after-ms, then x-ms-retry-after-ms: milliseconds (OpenAI, Azure
//     OpenAI, Azure Cosmos DB), a fraction allowed.
//  2. Retry-After (RFC 9110 §10.2.3): delay-seconds, or an HTTP-date in any
//     of the three forms of RFC 9110 §5.6.7. A fraction such as Shopify's
//     "2.0" is accepted. A date counts from now when the response's
//     Date header (§6.6.1, one-second resolution) agrees with the local
//     clock to within about a second. When the server's clock is skewed, a
//     date counts from the Date, but never less than from now. A Date
//     more than a day off is ignored. A date in the past gives 0, ok.
//  3. On a 429 or 503 response, or when the matching remaining count is 0,
//     the reset headers. First the IETF RateLimit field's "t"
//     (draft-ietf-httpapi-ratelimit-headers §4.1). Then RateLimit-Reset,
//     then X-RateLimit-Reset, read as delta seconds, epoch seconds or epoch
//     milliseconds by their size. A reset value of 1e14 or more (an epoch in
//     microseconds or nanoseconds) is malformed. Then Discord's
//     X-RateLimit-Reset-After (seconds). Then OpenAI's
//     x-ratelimit-reset-requests and -tokens (Go durations such as "6m0s").
//     Then Anthropic's anthropic-ratelimit-*-reset (RFC 3339 instants).
//     Last, Shopify's X-Shopify-Shop-Api-Call-Limit: a full bucket has room
//     after half a second.
//
// A malformed header (a sign, a unit, a zone other than GMT) is skipped in
// favour of the next. The delay is never negative. One too large for a
// time.Duration saturates at the largest Duration instead of overflowing,
// so it lands above any cap. RetryAfter applies no cap ([Transport] uses
// MaxRetryAfter, DefaultMaxRetryAfter by default). It does not judge the
// status: a delay on a 200 or a 301 is reported too; the caller decides
// what it means. A nil resp gives 0, false. It does not read the body and
// is safe for concurrent use.
func RetryAfter(resp *http.Response, now time.Time) (d time.Duration, ok bool) {
	d, _, ok = serverDelay(resp, now)
	return d, ok
}

// Throttled reports whether resp, received at now, is a throttle: the
// answer on which a [Transport] pauses the request's whole key. This is
// pace's one definition of a throttle:
//
//   - a 429 Too Many Requests (RFC 6585 §4), with a delay or without;
//   - a 503 Service Unavailable (RFC 9110 §15.6.4) that names a delay;
//   - a 403 Forbidden that names a delay: Retry-After, or a spent quota's
//     reset (x-ratelimit-remaining: 0 with x-ratelimit-reset), as GitHub
//     answers its rate limits (docs.github.com, "Rate limits for the REST
//     API").
//
// A 503 without a delay is an outage and a 403 without one a refusal:
// neither pauses the key, and a 403 is not retried. A throttling 403 is
// retried as a 429 is. delay is the server's delay as [RetryAfter] reads
// it, 0 when it gave none or named a past instant (see [Transport] for the
// pause then). A nil resp gives 0, false. It does not read the body and is
// safe for concurrent use.
func Throttled(resp *http.Response, now time.Time) (delay time.Duration, ok bool) {
	if resp == nil || !retryrule.Throttle(resp.StatusCode, true) {
		return 0, false
	}
	delay, _, fromServer := serverDelay(resp, now)
	return delay, retryrule.Throttle(resp.StatusCode, fromServer)
}

// Names of the response headers that carry a delay, in canonical form
// (textproto.CanonicalMIMEHeaderKey), so that lookups do not allocate.
// These are also the source names serverDelay reports. internal/hdr holds
// RetryAfter, RateLimit and RateLimitPolicy, which other packages share.
const (
	hdrRetryAfterMs     = "Retry-After-Ms"        // OpenAI, Azure OpenAI
	hdrMsRetryAfterMs   = "X-Ms-Retry-After-Ms"   // Azure Cosmos DB and other Azure services
	hdrRateLimitReset   = "Ratelimit-Reset"       // RateLimit-Reset, drafts up to -06, GitLab and others
	hdrRateLimitRemain  = "Ratelimit-Remaining"   // RateLimit-Remaining, idem
	hdrXRateLimitReset  = "X-Ratelimit-Reset"     // X-RateLimit-Reset: GitHub, X (Twitter) and many others
	hdrXRateLimitRemain = "X-Ratelimit-Remaining" // X-RateLimit-Remaining
)

// serverDelay returns the delay the server asked for in resp, counted from
// now (the moment the response was received). It also returns the header
// it came from (its canonical key, e.g. "Retry-After" or
// "X-Ratelimit-Reset"). ok is false when the response carries no usable
// delay. d is never negative. A delay too large to represent is the
// largest time.Duration, so that the caller's cap (DefaultMaxRetryAfter)
// applies. The caller applies the cap and decides whether the status is
// retried at all. The delay is reported on any status that carries it. RFC
// 9110 §10.2.3 allows Retry-After on 3xx and 503, and servers send it on
// 429 and other statuses too.
//
// Precedence: the first usable header wins. An unusable one (missing,
// malformed, negative) falls through to the next:
//
//  1. retry-after-ms, then x-ms-retry-after-ms: milliseconds, the finer
//     form of Retry-After that OpenAI, Azure OpenAI and Azure Cosmos DB
//     send, often next to a Retry-After in whole seconds.
//  2. Retry-After (RFC 9110 §10.2.3): delay-seconds, or an HTTP-date in any
//     of the three formats of RFC 9110 §5.6.7. A date is turned into a
//     delay by the rule of dateDelay against now and the response's Date.
//     So the retry leaves at the server's instant, neither before it nor a
//     second late.
//  3. Reset headers. They mean a delay only when the response is a 429 or
//     503, or when their matching remaining count says the quota is spent.
//     First the IETF RateLimit field: its "t" parameter
//     (draft-ietf-httpapi-ratelimit-headers §4.1.2). The draft says
//     Retry-After takes precedence over it (§7). Then come the families of
//     quotaFamilies in their order: RateLimit-Reset with
//     RateLimit-Remaining, X-RateLimit-Reset with X-RateLimit-Remaining,
//     and the vendor families. Last comes Shopify's call limit
//     (shopifyHint). Each family's reset is read in its own form
//     (parseReset).
//
// serverDelay does not read the body and is safe for concurrent use.
func serverDelay(resp *http.Response, now time.Time) (d time.Duration, source string, ok bool) {
	if resp == nil {
		return 0, "", false
	}
	h := resp.Header
	for _, name := range [...]string{hdrRetryAfterMs, hdrMsRetryAfterMs} {
		if d, ok := parseMillis(headerValue(h, name)); ok {
			return d, name, true
		}
	}
	if v := headerValue(h, hdr.RetryAfter); v != "" {
		if d, ok := parseRetryAfterAt(v, now, responseDate(h, now)); ok {
			return d, hdr.RetryAfter, true
		}
	}
	throttled := retryrule.ThrottleStatus(resp.StatusCode)
	if vs := h[hdr.RateLimit]; len(vs) > 0 {
		if items, ok := parseRateLimit(vs); ok {
			if d, ok := rateLimitDelay(items, throttled); ok {
				return d, hdr.RateLimit, true
			}
		}
	}
	for source, q := range quotaHints(h, now) {
		if q.hasReset && (throttled || q.remaining == 0) {
			return q.reset, source, true
		}
	}
	return 0, "", false
}

// parseRetryAfterAt interprets a Retry-After field value (RFC 9110
// §10.2.3) received at now. The response's Date header is serverDate (the
// zero Time when it is absent or invalid). It accepts delay-seconds
// (1*DIGIT). It accepts a fraction as Shopify sends it ("2.0"; 1*DIGIT "."
// 1*DIGIT), rounded up to the nanosecond, never shortened. It accepts an
// HTTP-date in the three formats RFC 9110 §5.6.7 requires recipients to
// accept:
//
//   - IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT");
//   - the obsolete RFC 850 form ("Sunday, 06-Nov-94 08:49:37 GMT");
//   - asctime ("Sun Nov  6 08:49:37 1994").
//
// Surrounding spaces and tabs (OWS, RFC 9110 §5.6.3) are ignored, since
// they are not part of a field value (§5.5). Nothing else is trimmed.
//
// ok is false for an empty or malformed value: a sign ("-1", "+5"), an
// empty fraction ("1."), a unit ("5s"), inner spaces, or a date whose zone
// is not GMT. An HTTP-date is turned into a delay by dateDelay, so a date in the past
// yields 0, ok (retry now). A delay too large to represent saturates to the
// largest time.Duration rather than wrapping, so the caller's cap applies.
// RFC 9111 §1.2.2 asks that of a cache for delta-seconds it cannot
// represent. d is never negative.
func parseRetryAfterAt(v string, now, serverDate time.Time) (d time.Duration, ok bool) {
	v = trimOWS(v)
	if v == "" {
		return 0, false
	}
	if isDigit(v[0]) {
		return parseDecimal(v, time.Second)
	}
	t, ok := parseHTTPDate(v, now)
	if !ok {
		return 0, false
	}
	return dateDelay(t, now, serverDate), true
}

// parseMillis parses the value of retry-after-ms or x-ms-retry-after-ms: a
// non-negative number of milliseconds. Azure documents integers. OpenAI's
// SDKs read the header as a number and may see a fraction. So a fractional
// part is accepted too ("1.5" is 1.5 ms). It is rounded up to the next
// nanosecond, so the delay is never shortened. The grammar is 1*DIGIT [ "."
// 1*DIGIT ] with surrounding OWS ignored. Signs, exponents, units and empty
// parts are rejected. Huge values saturate to the largest time.Duration.
func parseMillis(v string) (time.Duration, bool) {
	return parseDecimal(trimOWS(v), time.Millisecond)
}
