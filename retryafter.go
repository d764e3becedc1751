package pace

import (
	"github.com/pacehttp/pace/internal/hdr"
	"github.com/pacehttp/pace/internal/retrystatus"
	"math"
	"net/http"
	"strings"
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

// RetryAfter returns the delay the server asked for in resp, measured from
// now (the moment the response was received). ok is false when the
// response names none. It reads the headers by the same rules as
// [Transport], first usable one first:
//
//  1. retry-after-ms, then x-ms-retry-after-ms: milliseconds (OpenAI, Azure
//     OpenAI, Azure Cosmos DB), a fraction allowed.
//  2. Retry-After (RFC 9110 §10.2.3): delay-seconds, or an HTTP-date in any
//     of the three forms of RFC 9110 §5.6.7. A fraction such as Shopify's
//     "2.0" is accepted. A date is measured from now when the response's
//     Date header (§6.6.1, one-second resolution) agrees with the local
//     clock to within about a second. When the server's clock is skewed, a
//     date is measured from the Date, but never less than from now. A Date
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
	if resp == nil || !retrystatus.Throttle(resp.StatusCode, true) {
		return 0, false
	}
	delay, _, fromServer := serverDelay(resp, now)
	return delay, retrystatus.Throttle(resp.StatusCode, fromServer)
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

// headerValue returns the first value of the canonical key in h, or "".
// Unlike http.Header.Get it never canonicalizes, so it never allocates.
func headerValue(h http.Header, canonicalKey string) string {
	if vs := h[canonicalKey]; len(vs) > 0 {
		return vs[0]
	}
	return ""
}

// maxDurationSeconds is the largest whole number of seconds a time.Duration
// can hold.
const maxDurationSeconds = math.MaxInt64 / int64(time.Second)

// epochSecondsFrom and epochMillisFrom tell epoch instants from deltas in
// the reset headers, and resetValueLimit marks the values too large to be
// either; see parseResetValue.
const (
	epochSecondsFrom = 1_000_000_000       // 2001-09-09T01:46:40Z in seconds
	epochMillisFrom  = 1_000_000_000_000   // the same instant in milliseconds
	resetValueLimit  = 100_000_000_000_000 // 1e14 ms: the year 5138
)

// serverDelay returns the delay the server asked for in resp, measured from
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
//     of the three formats of RFC 9110 §5.6.7. A date is measured by the
//     rule of dateDelay against now and the response's Date. So the retry
//     leaves at the server's instant, neither before it nor a second late.
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
	throttled := retrystatus.ThrottleStatus(resp.StatusCode)
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
// is not GMT. An HTTP-date is measured by dateDelay, so a date in the past
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

// dateTolerance is how far, beyond the one-second resolution of the Date
// header, the Date may lie from the local clock and still count as
// agreeing with it. It is room for the time between the server stamping
// the response and the client receiving it. See dateDelay.
const dateTolerance = 100 * time.Millisecond

// maxDateSkew is the largest distance between a response's Date and the
// local clock that dateDelay takes for clock skew. A Date further off is
// broken (a device whose clock was never set says 1970) and is ignored.
const maxDateSkew = 24 * time.Hour

// dateDelay returns how long to wait, from now, for the absolute instant t
// named by a server. Its response carried serverDate (the zero Time when it
// had no valid Date header).
//
// RFC 9110 §10.2.3 makes an HTTP-date relative to the server's clock. The
// response's Date (§6.6.1) is that clock when the response was generated,
// truncated to the second. An HTTP-date has a resolution of one second, so
// a Date stamped at 12:00:00.9 reads 12:00:00. The rule:
//
//   - No Date, or a Date more than maxDateSkew (a day) from now: the Date
//     is absent or broken, not a skew to correct for. Wait t − now.
//   - A Date that agrees with the local clock within its resolution:
//     serverDate in (now − 1s − dateTolerance, now + dateTolerance]. The
//     two clocks agree as far as the Date can tell, and the Date is the
//     local clock truncated. Waiting t − serverDate would leave up to a
//     second after t. So trust the local clock and wait t − now: the retry
//     leaves at t, never before it and not late.
//   - A Date further off, by less than a day: the server's clock is
//     skewed. Wait t − serverDate from receipt. Then the server's clock
//     reads at least t when the retry arrives, whatever the skew, because
//     transit time only adds to it. The wait is never shorter than t − now
//     either. So a server clock ahead of ours does not bring the retry
//     before t by our clock.
//
// The result is never negative: a past instant means 0, retry now.
func dateDelay(t, now, serverDate time.Time) time.Duration {
	d := max(t.Sub(now), 0) // Sub saturates instead of overflowing
	if serverDate.IsZero() {
		return d
	}
	behind := now.Sub(serverDate) // how far the Date is behind our clock; saturates
	if behind > maxDateSkew || behind < -maxDateSkew {
		return d // a broken Date: ignored
	}
	if -dateTolerance <= behind && behind < time.Second+dateTolerance {
		return d // the Date agrees with our clock within its resolution
	}
	return max(d, t.Sub(serverDate))
}

// responseDate returns the response's Date header (RFC 9110 §6.6.1),
// received at now, or the zero Time when it is missing or malformed.
func responseDate(h http.Header, now time.Time) time.Time {
	t, _ := parseHTTPDate(trimOWS(headerValue(h, "Date")), now)
	return t
}

// parseHTTPDate parses an HTTP-date received at now, in the three formats
// of RFC 9110 §5.6.7, tried in the order http.ParseTime tries them, with
// two corrections:
//
//   - The zone must be GMT. time.Parse accepts any zone abbreviation in the
//     RFC 850 form and reads, say, "PST" with the offset of the machine's
//     local zone, which would make the result depend on where the client
//     runs.
//   - A two-digit RFC 850 year is read as §5.6.7 requires: the year with
//     those digits in now's century, or the century before when that is
//     more than 50 years after now. (time.Parse maps 69–99 to the 1900s
//     and 00–68 to the 2000s whatever the date.)
//
// The zero Time and false when v is not a valid HTTP-date.
func parseHTTPDate(v string, now time.Time) (time.Time, bool) {
	if v == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(http.TimeFormat, v) // IMF-fixdate
	rfc850 := false
	if err != nil {
		t, err = time.Parse(time.RFC850, v)
		rfc850 = err == nil
	}
	if err != nil {
		t, err = time.Parse(time.ANSIC, v) // asctime
	}
	if err != nil {
		return time.Time{}, false
	}
	if name, off := t.Zone(); off != 0 || (name != "UTC" && name != "GMT") {
		return time.Time{}, false
	}
	if rfc850 {
		ref := now.UTC().Year()
		year := ref - ref%100 + t.Year()%100
		if year > ref+50 {
			year -= 100
		}
		t = t.AddDate(year-t.Year(), 0, 0)
	}
	return t.UTC(), true
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

// parseResetValue interprets X-RateLimit-Reset or RateLimit-Reset, whose
// meaning differs between servers. GitHub (X-RateLimit-Reset) and GitLab
// (RateLimit-Reset) send an epoch instant in seconds. The IETF drafts up
// to -06 and many servers send seconds until the reset. A few send epoch
// milliseconds. The rule tells them apart by size. v is a decimal number
// of seconds or milliseconds. A fraction is allowed as in parseMillis,
// because Discord sends "1470173023.123".
//
//   - v < 1e9: a delta in seconds. 1e9 s is almost 32 years, far beyond any
//     real window, so no real delta is mistaken for an instant.
//   - 1e9 ≤ v < 1e12: a Unix time in seconds (from 2001-09-09 to the year
//     33658). Every epoch-seconds value sent today is in this range.
//   - 1e12 ≤ v < 1e14: a Unix time in milliseconds (1e12 ms is again
//     2001-09-09, 1e14 ms the year 5138).
//   - v ≥ 1e14: malformed, ignored (ok is false, and serverDelay tries the
//     next header). No epoch in seconds or milliseconds is that large. Such
//     a value is most likely a Unix time in microseconds or nanoseconds
//     (today about 1.8e15 and 1.8e18). Read as milliseconds, it would name
//     an instant centuries ahead.
//
// An instant is measured by dateDelay against now and the response's Date,
// like an HTTP-date in Retry-After. So a past instant yields 0. d is never
// negative and saturates.
func parseResetValue(v string, now, serverDate time.Time) (time.Duration, bool) {
	v = trimOWS(v)
	intPart := v
	if i := strings.IndexByte(v, '.'); i >= 0 {
		intPart = v[:i]
	}
	n, ok := parseDigits(intPart)
	if !ok || n >= resetValueLimit {
		return 0, false
	}
	unit := time.Second
	if n >= epochMillisFrom {
		unit = time.Millisecond
	}
	d, ok := parseDecimal(v, unit)
	if !ok || n < epochSecondsFrom {
		return d, ok
	}
	return dateDelay(time.Unix(0, 0).Add(d), now, serverDate), true
}

// secondsDuration converts whole seconds to a Duration, saturating.
func secondsDuration(secs uint64) time.Duration {
	if secs > uint64(maxDurationSeconds) {
		return math.MaxInt64
	}
	return time.Duration(secs) * time.Second
}

// parseDigits parses 1*DIGIT as an unsigned integer, saturating at
// math.MaxUint64 instead of failing on overflow. ok is false when v is empty
// or holds anything but ASCII digits.
func parseDigits(v string) (uint64, bool) {
	if v == "" {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !isDigit(c) {
			return 0, false
		}
		if n > (math.MaxUint64-9)/10 {
			n = math.MaxUint64 // keep scanning so garbage after digits still fails
			continue
		}
		n = n*10 + uint64(c-'0')
	}
	return n, true
}

// parseDecimal parses 1*DIGIT [ "." 1*DIGIT ] as a count of unit, rounding
// a fraction finer than a nanosecond up and saturating at the largest
// Duration. unit must be a positive power of ten nanoseconds up to a second.
func parseDecimal(v string, unit time.Duration) (time.Duration, bool) {
	intPart, frac, hasFrac := strings.Cut(v, ".")
	whole, ok := parseDigits(intPart)
	if !ok {
		return 0, false
	}
	if hasFrac {
		if _, ok := parseDigits(frac); !ok {
			return 0, false
		}
	}
	if whole > uint64(math.MaxInt64/int64(unit)) {
		return math.MaxInt64, true
	}
	d := time.Duration(whole) * unit
	// The fraction, in nanoseconds: unit has len(digits of unit)-1 decimal
	// places of nanoseconds, e.g. 6 for a millisecond.
	var fracNs int64
	for scale, i := int64(unit)/10, 0; i < len(frac); i++ {
		digit := int64(frac[i] - '0')
		if scale == 0 {
			if digit != 0 { // finer than a nanosecond: round up
				fracNs++
				break
			}
			continue
		}
		fracNs += digit * scale
		scale /= 10
	}
	if d > math.MaxInt64-time.Duration(fracNs) {
		return math.MaxInt64, true
	}
	return d + time.Duration(fracNs), true
}

// trimOWS removes the spaces and horizontal tabs around v (OWS, RFC 9110
// §5.6.3) and nothing else.
func trimOWS(v string) string { return strings.Trim(v, " \t") }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
