package pace

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultMaxRetryAfter is the default cap on a delay the server asks for
// (Retry-After and the other headers read by the Transport). A server-given
// delay above the cap is not slept: the response goes back to the caller at
// once, unretried, because a retry before the server's instant is certain to
// fail and a longer sleep would park the caller (hashicorp/go-retryablehttp
// #247). A delay too large to represent is the largest time.Duration, so it
// always lands above any cap.
const DefaultMaxRetryAfter = 5 * time.Minute

// Names of the response headers that carry a delay, in canonical form
// (textproto.CanonicalMIMEHeaderKey) so that lookups do not allocate; these
// are also the source names serverDelay reports.
const (
	hdrRetryAfter       = "Retry-After"           // RFC 9110 §10.2.3
	hdrRetryAfterMs     = "Retry-After-Ms"        // OpenAI, Azure OpenAI
	hdrMsRetryAfterMs   = "X-Ms-Retry-After-Ms"   // Azure Cosmos DB and other Azure services
	hdrRateLimit        = "Ratelimit"             // RateLimit, draft-ietf-httpapi-ratelimit-headers-10/11 §4
	hdrRateLimitPolicy  = "Ratelimit-Policy"      // RateLimit-Policy, same draft §3
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
// the reset headers; see parseResetValue.
const (
	epochSecondsFrom = 1_000_000_000     // 2001-09-09T01:46:40Z in seconds
	epochMillisFrom  = 1_000_000_000_000 // the same instant in milliseconds
)

// serverDelay returns the delay the server asked for in resp, measured from
// now (the moment the response was received), the header it came from (its
// canonical key, e.g. "Retry-After" or "X-Ratelimit-Reset"), and ok ==
// false when the response carries no usable delay. d is never negative; a delay too large to represent is the largest
// time.Duration, so that the caller's cap (DefaultMaxRetryAfter) applies.
// The caller applies the cap and decides whether the status is retried at
// all: the delay is reported on any status that carries it (RFC 9110
// §10.2.3 allows Retry-After on 3xx and 503, and servers send it on 429 and
// other statuses too).
//
// Precedence, first usable header wins; an unusable one (missing, malformed,
// negative, fractional delay-seconds) falls through to the next:
//
//  1. retry-after-ms, then x-ms-retry-after-ms: milliseconds, the finer
//     form of Retry-After that OpenAI, Azure OpenAI and Azure Cosmos DB
//     send, often next to a Retry-After in whole seconds.
//  2. Retry-After (RFC 9110 §10.2.3): delay-seconds, or an HTTP-date in any
//     of the three formats of RFC 9110 §5.6.7. A date is measured by the
//     rule of dateDelay, so the retry never leaves before the server's
//     instant.
//  3. Reset headers, which mean a delay only when the response is a 429 or
//     503, or when their matching remaining count says the quota is spent:
//     the IETF RateLimit field (its "t" parameter, draft-ietf-httpapi-
//     ratelimit-headers §4.1.2; the draft says Retry-After takes precedence
//     over it, §7), then RateLimit-Reset (with RateLimit-Remaining), then
//     X-RateLimit-Reset (with X-RateLimit-Remaining). Their values are
//     epoch or delta seconds as parseResetValue explains.
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
	if v := headerValue(h, hdrRetryAfter); v != "" {
		if d, ok := parseRetryAfterAt(v, now, responseDate(h, now)); ok {
			return d, hdrRetryAfter, true
		}
	}
	throttled := isThrottleStatus(resp.StatusCode)
	if vs := h[hdrRateLimit]; len(vs) > 0 {
		if items, ok := parseRateLimit(vs); ok {
			if d, ok := rateLimitDelay(items, throttled); ok {
				return d, hdrRateLimit, true
			}
		}
	}
	for _, p := range [...]struct{ reset, remaining string }{
		{hdrRateLimitReset, hdrRateLimitRemain},
		{hdrXRateLimitReset, hdrXRateLimitRemain},
	} {
		v := headerValue(h, p.reset)
		if v == "" || !(throttled || quotaSpent(headerValue(h, p.remaining))) {
			continue
		}
		if d, ok := parseResetValue(v, now, responseDate(h, now)); ok {
			return d, p.reset, true
		}
	}
	return 0, "", false
}

// isThrottleStatus reports whether code says the client is being throttled:
// 429 Too Many Requests (RFC 6585 §4) or 503 Service Unavailable (RFC 9110
// §15.6.4). Reset headers count as a delay on these statuses, and a throttle
// with no usable delay gets the throttle backoff
// (DefaultThrottleBackoffInitial) rather than the error backoff.
func isThrottleStatus(code int) bool {
	return code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable
}

// parseRetryAfter interprets a Retry-After field value (RFC 9110 §10.2.3)
// received at now. It accepts delay-seconds (1*DIGIT) and an HTTP-date in
// the three formats RFC 9110 §5.6.7 requires recipients to accept:
// IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"), the obsolete RFC 850 form
// ("Sunday, 06-Nov-94 08:49:37 GMT") and asctime ("Sun Nov  6 08:49:37
// 1994"). Surrounding spaces and tabs (OWS, RFC 9110 §5.6.3) are ignored,
// since they are not part of a field value (§5.5); nothing else is trimmed.
//
// ok is false for an empty or malformed value: a sign ("-1", "+5"), a
// fraction ("1.5"), a unit ("5s"), inner spaces, or a date whose zone is not
// GMT. A date in the past yields 0, ok (retry now). A delay too large to
// represent saturates to the largest time.Duration rather than wrapping, so
// the caller's cap applies, as RFC 9111 §1.2.2 asks of a cache for
// delta-seconds it cannot represent. d is never negative.
func parseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	return parseRetryAfterAt(v, now, time.Time{})
}

// parseRetryAfterAt is parseRetryAfter with the response's Date (the zero
// Time when absent or invalid): an HTTP-date is then measured by dateDelay.
func parseRetryAfterAt(v string, now, serverDate time.Time) (time.Duration, bool) {
	v = trimOWS(v)
	if v == "" {
		return 0, false
	}
	if isDigit(v[0]) {
		secs, ok := parseDigits(v)
		if !ok {
			return 0, false
		}
		return secondsDuration(secs), true
	}
	t, ok := parseHTTPDate(v, now)
	if !ok {
		return 0, false
	}
	return dateDelay(t, now, serverDate), true
}

// dateDelay returns how long to wait, from now, for the absolute instant t
// named by a server whose response carried serverDate (the zero Time when it
// had no valid Date header).
//
// RFC 9110 §10.2.3 makes an HTTP-date relative to the server's clock, and
// the response's Date (§6.6.1) is that clock when the response was
// generated. Waiting t − serverDate from receipt means the server's clock
// reads at least t when the retry arrives, whatever the skew between the two
// clocks, because transit time only adds to it. Waiting t − now is right
// when the clocks agree and the Date header is unreliable (a proxy's, or
// truncated to the second). dateDelay waits for the longer of the two, so a
// retry never leaves before the server's instant by either reckoning. The
// result is never negative: a past instant means 0, retry now.
func dateDelay(t, now, serverDate time.Time) time.Duration {
	d := max(t.Sub(now), 0) // Sub saturates instead of overflowing
	if !serverDate.IsZero() {
		d = max(d, t.Sub(serverDate))
	}
	return d
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
// non-negative number of milliseconds. Azure documents integers; OpenAI's
// SDKs read the header as a number and may see a fraction, so a fractional
// part is accepted too ("1.5" is 1.5 ms), rounded up to the next nanosecond
// so the delay is never shortened. The grammar is 1*DIGIT [ "." 1*DIGIT ]
// with surrounding OWS ignored; signs, exponents, units and empty parts are
// rejected. Huge values saturate to the largest time.Duration.
func parseMillis(v string) (time.Duration, bool) {
	return parseDecimal(trimOWS(v), time.Millisecond)
}

// parseResetValue interprets X-RateLimit-Reset or RateLimit-Reset, whose
// meaning differs between servers: GitHub (X-RateLimit-Reset) and GitLab
// (RateLimit-Reset) send an epoch instant in seconds, the IETF drafts up to
// -06 and many servers send seconds until the reset, and a few send epoch
// milliseconds. The rule that tells them apart, by size (v is a decimal
// number of seconds or milliseconds, fraction allowed as in parseMillis,
// because Discord sends "1470173023.123"):
//
//   - v < 1e9: a delta in seconds. 1e9 s is almost 32 years, far beyond any
//     real window, so no real delta is mistaken for an instant.
//   - 1e9 ≤ v < 1e12: a Unix time in seconds (from 2001-09-09 to the year
//     33658); every epoch-seconds value sent today is in this range.
//   - v ≥ 1e12: a Unix time in milliseconds (1e12 ms is again 2001-09-09).
//
// An instant is measured by dateDelay against now and the response's Date,
// so a past instant yields 0. d is never negative and saturates.
func parseResetValue(v string, now, serverDate time.Time) (time.Duration, bool) {
	v = trimOWS(v)
	intPart := v
	if i := strings.IndexByte(v, '.'); i >= 0 {
		intPart = v[:i]
	}
	n, ok := parseDigits(intPart)
	if !ok {
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

// quotaSpent reports whether a remaining-count header (X-RateLimit-Remaining,
// RateLimit-Remaining) says no request is left: its value is 1*DIGIT and
// zero. Anything else, including a negative or missing value, is not taken
// as a spent quota.
func quotaSpent(v string) bool {
	n, ok := parseDigits(trimOWS(v))
	return ok && n == 0
}

// rateLimitItem is one service limit of the IETF RateLimit field
// (draft-ietf-httpapi-ratelimit-headers §4.1): the policy it belongs to,
// the quota units left (r) and, when hasReset, the effective window in which
// the client may use no more than that (t).
type rateLimitItem struct {
	policy    string
	remaining int64
	reset     time.Duration
	hasReset  bool
}

// rateLimitPolicy is one quota policy of the IETF RateLimit-Policy field
// (draft §3.1): the quota q, its unit (qu, "requests" when absent) and, when
// window > 0, the window w. It is information for pacing, not a delay.
type rateLimitPolicy struct {
	name   string
	quota  int64
	unit   string
	window time.Duration
}

// rateLimitDelay returns the wait implied by the RateLimit items: the
// longest effective window (t) among the policies whose quota is spent
// (r=0). On a 429 or 503 (throttled) where no item says r=0, the server
// refused for a policy it reports as not spent; the wait is then the longest
// t of all items, the first moment by which every announced window has
// ended. ok is false when no item qualifies.
func rateLimitDelay(items []rateLimitItem, throttled bool) (time.Duration, bool) {
	var spent, all time.Duration
	var spentOK, allOK bool
	for _, it := range items {
		if !it.hasReset {
			continue
		}
		if it.remaining == 0 {
			spent, spentOK = max(spent, it.reset), true
		}
		all, allOK = max(all, it.reset), true
	}
	switch {
	case spentOK:
		return spent, true
	case throttled && allOK:
		return all, true
	}
	return 0, false
}

// parseRateLimit parses the RateLimit field lines (draft-ietf-httpapi-
// ratelimit-headers §4, an RFC 9651 List split over any number of lines,
// e.g. `"default";r=0;t=30`). Each item names its policy with a String or a
// Token; r (required) and t (optional) must be non-negative Integers, other
// parameters are ignored. A malformed field is ignored as a whole (ok ==
// false), as draft §7 requires.
func parseRateLimit(lines []string) ([]rateLimitItem, bool) {
	members, ok := parseSFList(lines)
	if !ok {
		return nil, false
	}
	items := make([]rateLimitItem, 0, len(members))
	for _, m := range members {
		if m.kind != sfString && m.kind != sfToken {
			return nil, false
		}
		it := rateLimitItem{policy: m.str, remaining: -1}
		for _, p := range m.params {
			switch p.key {
			case "r":
				if p.kind != sfInteger || p.num < 0 {
					return nil, false
				}
				it.remaining = p.num
			case "t":
				if p.kind != sfInteger || p.num < 0 {
					return nil, false
				}
				it.reset, it.hasReset = secondsDuration(uint64(p.num)), true
			}
		}
		if it.remaining < 0 { // r is required
			return nil, false
		}
		items = append(items, it)
	}
	return items, true
}

// parseRateLimitPolicy parses the RateLimit-Policy field lines (draft §3,
// e.g. `"burst";q=100;w=60,"daily";q=1000;w=86400`): q (required) a
// non-negative Integer, w (optional) a positive Integer of seconds, qu
// (optional) a String. A malformed field is ignored as a whole (ok == false).
// The policies are information (draft §7: "MAY be ignored"); serverDelay
// does not use them.
func parseRateLimitPolicy(lines []string) ([]rateLimitPolicy, bool) {
	members, ok := parseSFList(lines)
	if !ok {
		return nil, false
	}
	pols := make([]rateLimitPolicy, 0, len(members))
	for _, m := range members {
		if m.kind != sfString && m.kind != sfToken {
			return nil, false
		}
		p := rateLimitPolicy{name: m.str, quota: -1, unit: "requests"}
		for _, prm := range m.params {
			switch prm.key {
			case "q":
				if prm.kind != sfInteger || prm.num < 0 {
					return nil, false
				}
				p.quota = prm.num
			case "w":
				if prm.kind != sfInteger || prm.num <= 0 {
					return nil, false
				}
				p.window = secondsDuration(uint64(prm.num))
			case "qu":
				if prm.kind != sfString {
					return nil, false
				}
				p.unit = prm.str
			}
		}
		if p.quota < 0 { // q is required
			return nil, false
		}
		pols = append(pols, p)
	}
	return pols, true
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

// sfKind is the type of an RFC 9651 (Structured Field Values) bare item.
type sfKind uint8

const (
	sfInteger sfKind = iota + 1
	sfDecimal
	sfString
	sfToken
	sfBytes
	sfBoolean
	sfDate
)

// sfParam is one parameter of a structured-field item: key and bare value.
type sfParam struct {
	key string
	sfValue
}

// sfValue is a bare item. num holds an Integer, Date or Boolean (0 or 1);
// str holds a String, Token, Byte Sequence (still base64) or Decimal's text.
type sfValue struct {
	kind sfKind
	num  int64
	str  string
}

// sfItem is a List member: a bare item and its parameters, in field order.
type sfItem struct {
	sfValue
	params []sfParam
}

// parseSFList parses field lines as one RFC 9651 List of Items (§4.2.1;
// lines are combined with commas, §4.2). Inner lists, Display Strings and
// any syntax error make the whole field invalid (ok == false). It
// implements exactly what the RateLimit fields need and is strict like the
// RFC's parsing algorithm, which says to fail the field on any error.
func parseSFList(lines []string) (items []sfItem, ok bool) {
	s := strings.Join(lines, ",")
	p := sfParser{s: strings.TrimLeft(s, " ")}
	if strings.TrimRight(p.s, " ") == "" {
		return nil, false // an empty List is "not present"
	}
	p.s = strings.TrimRight(p.s, " ")
	for {
		it, ok := p.item()
		if !ok {
			return nil, false
		}
		items = append(items, it)
		p.skipOWS()
		if p.done() {
			return items, true
		}
		if !p.consume(',') {
			return nil, false
		}
		p.skipOWS()
		if p.done() {
			return nil, false // trailing comma
		}
	}
}

// sfParser is a cursor over a structured field value.
type sfParser struct {
	s string
	i int
}

func (p *sfParser) done() bool { return p.i >= len(p.s) }

func (p *sfParser) peek() byte {
	if p.done() {
		return 0
	}
	return p.s[p.i]
}

func (p *sfParser) consume(c byte) bool {
	if p.peek() == c && !p.done() {
		p.i++
		return true
	}
	return false
}

func (p *sfParser) skipOWS() {
	for !p.done() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *sfParser) item() (sfItem, bool) {
	v, ok := p.bareItem()
	if !ok {
		return sfItem{}, false
	}
	it := sfItem{sfValue: v}
	for p.consume(';') {
		for p.consume(' ') {
		}
		key, ok := p.key()
		if !ok {
			return sfItem{}, false
		}
		val := sfValue{kind: sfBoolean, num: 1} // a bare key means true
		if p.consume('=') {
			if val, ok = p.bareItem(); !ok {
				return sfItem{}, false
			}
		}
		it.params = append(it.params, sfParam{key: key, sfValue: val})
	}
	return it, true
}

func (p *sfParser) key() (string, bool) {
	start := p.i
	if c := p.peek(); !(('a' <= c && c <= 'z') || c == '*') {
		return "", false
	}
	for !p.done() {
		c := p.s[p.i]
		if !(('a' <= c && c <= 'z') || isDigit(c) || strings.IndexByte("_-.*", c) >= 0) {
			break
		}
		p.i++
	}
	return p.s[start:p.i], true
}

func (p *sfParser) bareItem() (sfValue, bool) {
	switch c := p.peek(); {
	case c == '-' || isDigit(c):
		return p.number()
	case c == '"':
		return p.sfString()
	case c == '*' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z'):
		start := p.i
		p.i++
		for !p.done() && (isTokenChar(p.s[p.i]) || p.s[p.i] == ':' || p.s[p.i] == '/') {
			p.i++
		}
		return sfValue{kind: sfToken, str: p.s[start:p.i]}, true
	case c == ':':
		p.i++
		start := p.i
		for !p.done() && p.s[p.i] != ':' {
			if !isBase64Char(p.s[p.i]) {
				return sfValue{}, false
			}
			p.i++
		}
		if !p.consume(':') {
			return sfValue{}, false
		}
		return sfValue{kind: sfBytes, str: p.s[start : p.i-1]}, true
	case c == '?':
		p.i++
		switch {
		case p.consume('0'):
			return sfValue{kind: sfBoolean, num: 0}, true
		case p.consume('1'):
			return sfValue{kind: sfBoolean, num: 1}, true
		}
		return sfValue{}, false
	case c == '@':
		p.i++
		v, ok := p.number()
		if !ok || v.kind != sfInteger {
			return sfValue{}, false
		}
		return sfValue{kind: sfDate, num: v.num}, true
	}
	return sfValue{}, false
}

// number parses an Integer (at most 15 digits) or a Decimal (at most 12
// integer and 3 fractional digits), RFC 9651 §4.2.4.
func (p *sfParser) number() (sfValue, bool) {
	start := p.i
	p.consume('-')
	digits := p.i
	for !p.done() && isDigit(p.s[p.i]) {
		p.i++
	}
	intDigits := p.i - digits
	if intDigits == 0 {
		return sfValue{}, false
	}
	if !p.consume('.') {
		if intDigits > 15 {
			return sfValue{}, false
		}
		n, err := strconv.ParseInt(p.s[start:p.i], 10, 64)
		return sfValue{kind: sfInteger, num: n}, err == nil
	}
	fracStart := p.i
	for !p.done() && isDigit(p.s[p.i]) {
		p.i++
	}
	if intDigits > 12 || p.i == fracStart || p.i-fracStart > 3 {
		return sfValue{}, false
	}
	return sfValue{kind: sfDecimal, str: p.s[start:p.i]}, true
}

func (p *sfParser) sfString() (sfValue, bool) {
	p.i++ // opening quote
	var b strings.Builder
	for !p.done() {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '\\':
			if p.done() || (p.s[p.i] != '"' && p.s[p.i] != '\\') {
				return sfValue{}, false
			}
			b.WriteByte(p.s[p.i])
			p.i++
		case c == '"':
			return sfValue{kind: sfString, str: b.String()}, true
		case c < 0x20 || c > 0x7e:
			return sfValue{}, false
		default:
			b.WriteByte(c)
		}
	}
	return sfValue{}, false // no closing quote
}

// isTokenChar reports whether c is a tchar (RFC 9110 §5.6.2).
func isTokenChar(c byte) bool {
	return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || isDigit(c) ||
		strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func isBase64Char(c byte) bool {
	return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || isDigit(c) ||
		c == '+' || c == '/' || c == '='
}
