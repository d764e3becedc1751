package pace

import (
	"iter"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/pacehttp/pace/internal/hdr"
	"github.com/pacehttp/pace/throttle"
)

// rateLimitItem is one service limit of the IETF RateLimit field
// (draft-ietf-httpapi-ratelimit-headers §4.1). It holds the policy it
// belongs to and the quota units left (r). When hasReset, it holds the
// effective window in which the client may use no more than that (t).
type rateLimitItem struct {
	policy    string
	remaining int64
	reset     time.Duration
	hasReset  bool
	partition string // pk, the partition key (a Byte Sequence, still base64), or ""
}

// rateLimitPolicy is one quota policy of the IETF RateLimit-Policy field
// (draft §3.1): the quota q, its unit (qu, "requests" when absent) and, when
// window > 0, the window w. It is information for pacing, not a delay.
type rateLimitPolicy struct {
	name      string
	quota     int64
	unit      string
	window    time.Duration
	partition string // pk, as in rateLimitItem
}

// rateLimitDelay returns the wait implied by the RateLimit items: the
// longest effective window (t) among the policies whose quota is spent
// (r=0). A 429 or 503 (throttled) may come where no item says r=0. The
// server then refused for a policy it reports as not spent. The wait is
// then the longest t of all items: the first moment by which every
// announced window has ended. ok is false when no item qualifies.
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
// ratelimit-headers §4). They are an RFC 9651 List split over any number of
// lines, e.g. `"default";r=0;t=30`. Each item names its policy with a
// String or a Token. r (required) and t (optional) must be non-negative
// Integers. pk (optional, the partition key) must be a Byte Sequence.
// Other parameters are ignored. A malformed field is ignored as a whole (ok
// == false), as draft §7 requires.
func parseRateLimit(lines []string) ([]rateLimitItem, bool) {
	return namedItems(lines, func(name string, params []sfParam) (rateLimitItem, bool) {
		it := rateLimitItem{policy: name, remaining: -1}
		for _, p := range params {
			switch {
			case p.key == "r" && p.atLeast(0):
				it.remaining = p.num
			case p.key == "t" && p.atLeast(0):
				it.reset, it.hasReset = secondsDuration(uint64(p.num)), true
			case p.key == "pk" && p.kind == sfBytes:
				it.partition = p.str
			case p.key == "r" || p.key == "t" || p.key == "pk":
				return it, false
			}
		}
		return it, it.remaining >= 0 // r is required
	})
}

// namedItems parses field lines as an RFC 9651 List of Items named by a
// String or a Token, each turned into a T by item from its name and
// parameters. ok is false when the List is malformed, a member is of
// another kind, or item refuses one.
func namedItems[T any](lines []string, item func(name string, params []sfParam) (T, bool)) ([]T, bool) {
	members, ok := parseSFList(lines)
	if !ok {
		return nil, false
	}
	out := make([]T, 0, len(members))
	for _, m := range members {
		if m.kind != sfString && m.kind != sfToken {
			return nil, false
		}
		v, ok := item(m.str, m.params)
		if !ok {
			return nil, false
		}
		out = append(out, v)
	}
	return out, true
}

// atLeast reports whether v is an Integer of at least lo.
func (v sfValue) atLeast(lo int64) bool { return v.kind == sfInteger && v.num >= lo }

// parseRateLimitPolicy parses the RateLimit-Policy field lines (draft §3,
// e.g. `"burst";q=100;w=60,"daily";q=1000;w=86400`). q (required) is a
// non-negative Integer. w (optional) is a positive Integer of seconds. qu
// (optional) is a String, and pk (optional) a Byte Sequence. A malformed
// field is ignored as a whole (ok == false). The policies are information
// (draft §7: "MAY be ignored"). serverDelay does not use them. serverQuota
// takes q as the limit and qu as the unit of the RateLimit items that name
// them.
func parseRateLimitPolicy(lines []string) ([]rateLimitPolicy, bool) {
	return namedItems(lines, func(name string, params []sfParam) (rateLimitPolicy, bool) {
		p := rateLimitPolicy{name: name, quota: -1, unit: "requests"}
		for _, prm := range params {
			switch {
			case prm.key == "q" && prm.atLeast(0):
				p.quota = prm.num
			case prm.key == "w" && prm.atLeast(1):
				p.window = secondsDuration(uint64(prm.num))
			case prm.key == "qu" && prm.kind == sfString:
				p.unit = prm.str
			case prm.key == "pk" && prm.kind == sfBytes:
				p.partition = prm.str
			case prm.key == "q" || prm.key == "w" || prm.key == "qu" || prm.key == "pk":
				return p, false
			}
		}
		return p, p.quota >= 0 // q is required
	})
}

// Names of the quota headers of the vendor families, in canonical form
// (textproto.CanonicalMIMEHeaderKey), so that lookups do not allocate.
const (
	hdrRateLimitLimit      = "Ratelimit-Limit"               // RateLimit-Limit, drafts up to -06
	hdrXRateLimitLimit     = "X-Ratelimit-Limit"             // X-RateLimit-Limit: GitHub and many others
	hdrXRateLimitResetAft  = "X-Ratelimit-Reset-After"       // Discord: seconds until the bucket resets, fraction allowed
	hdrXRateLimitBucket    = "X-Ratelimit-Bucket"            // Discord: the id of the bucket the limit belongs to
	hdrShopifyCallLimit    = "X-Shopify-Shop-Api-Call-Limit" // Shopify REST Admin API: "fill/capacity" of a leaky bucket
	hdrOpenAIRemainReqs    = "X-Ratelimit-Remaining-Requests"
	hdrOpenAIResetReqs     = "X-Ratelimit-Reset-Requests"
	hdrOpenAILimitReqs     = "X-Ratelimit-Limit-Requests"
	hdrOpenAIRemainTokens  = "X-Ratelimit-Remaining-Tokens"
	hdrOpenAIResetTokens   = "X-Ratelimit-Reset-Tokens"
	hdrOpenAILimitTokens   = "X-Ratelimit-Limit-Tokens"
	hdrAnthropicReqsPrefix = "Anthropic-Ratelimit-Requests-"
	hdrAnthropicTokPrefix  = "Anthropic-Ratelimit-Tokens-"
	hdrAnthropicInPrefix   = "Anthropic-Ratelimit-Input-Tokens-"
	hdrAnthropicOutPrefix  = "Anthropic-Ratelimit-Output-Tokens-"
)

// resetForm is how a quota family writes its reset.
type resetForm uint8

const (
	resetEpochOrDelta resetForm = iota // parseResetValue: delta or epoch seconds, epoch milliseconds
	resetDeltaSeconds                  // seconds from now, fraction allowed (Discord's Reset-After)
	resetGoDuration                    // a Go duration such as "6m0s", "1.5s", "20ms" (OpenAI)
	resetRFC3339                       // an RFC 3339 instant (Anthropic)
)

// quotaFamily names the headers of one family of quota headers: the limit,
// what remains of it and when it resets.
type quotaFamily struct {
	limit, remaining, reset string
	form                    resetForm
	tokens                  bool // counts tokens (or other units), not requests
}

// quotaFamilies lists the families of limit/remaining/reset headers pace
// reads, in the precedence serverDelay gives their resets (after the IETF
// RateLimit field):
//
//   - RateLimit-Limit/-Remaining/-Reset: the IETF drafts up to -06, GitLab.
//   - X-RateLimit-Limit/-Remaining/-Reset: GitHub (reset in epoch seconds,
//     also on its 403 for a spent primary limit: GitHub REST API docs,
//     "Rate limits for the REST API"), X, and many servers with delta
//     seconds; parseResetValue tells the two apart by size.
//   - X-RateLimit-Reset-After (with X-RateLimit-Limit/-Remaining): Discord,
//     seconds with a fraction ("Rate Limits" in the Discord developer docs).
//   - x-ratelimit-limit/remaining/reset-requests and -tokens: OpenAI, with
//     the reset as a Go duration ("6m0s", "1.5s", "20ms").
//   - anthropic-ratelimit-requests-, -tokens-, -input-tokens- and
//     -output-tokens- limit/remaining/reset: Anthropic, with the reset as an
//     RFC 3339 instant.
var quotaFamilies = [...]quotaFamily{
	{hdrRateLimitLimit, hdrRateLimitRemain, hdrRateLimitReset, resetEpochOrDelta, false},
	{hdrXRateLimitLimit, hdrXRateLimitRemain, hdrXRateLimitReset, resetEpochOrDelta, false},
	{hdrXRateLimitLimit, hdrXRateLimitRemain, hdrXRateLimitResetAft, resetDeltaSeconds, false},
	{hdrOpenAILimitReqs, hdrOpenAIRemainReqs, hdrOpenAIResetReqs, resetGoDuration, false},
	{hdrOpenAILimitTokens, hdrOpenAIRemainTokens, hdrOpenAIResetTokens, resetGoDuration, true},
	{hdrAnthropicReqsPrefix + "Limit", hdrAnthropicReqsPrefix + "Remaining", hdrAnthropicReqsPrefix + "Reset", resetRFC3339, false},
	{hdrAnthropicTokPrefix + "Limit", hdrAnthropicTokPrefix + "Remaining", hdrAnthropicTokPrefix + "Reset", resetRFC3339, true},
	{hdrAnthropicInPrefix + "Limit", hdrAnthropicInPrefix + "Remaining", hdrAnthropicInPrefix + "Reset", resetRFC3339, true},
	{hdrAnthropicOutPrefix + "Limit", hdrAnthropicOutPrefix + "Remaining", hdrAnthropicOutPrefix + "Reset", resetRFC3339, true},
}

// quotaHint is what one family (or one RateLimit item) of a response says
// about one limit of the client.
type quotaHint struct {
	limit     int64         // the quota; 0: not given
	window    time.Duration // the quota's window (IETF w; Shopify capacity/leak); 0: not given
	remaining int64         // units left; -1: not given or malformed
	reset     time.Duration // until the quota grows again, when hasReset
	hasReset  bool
	tokens    bool   // counts tokens or other units, not requests
	bucket    string // the limit's identity when the server names it (Discord bucket, IETF pk)
	// consistent: nothing in the family contradicts itself (a remaining
	// count above the limit). Inconsistent hints may still name a delay,
	// but are never used for pacing.
	consistent bool
}

// pacing reports whether h can pace requests: a consistent remaining count
// and reset.
func (h *quotaHint) pacing() bool { return h.consistent && h.remaining >= 0 && h.hasReset }

// quotaHints yields the hint of each family of h with a reset header, with
// the header its reset came from. They come in the order of quotaFamilies,
// then Shopify's call limit (shopifyHint). h was received at now.
func quotaHints(h http.Header, now time.Time) iter.Seq2[string, quotaHint] {
	return func(yield func(string, quotaHint) bool) {
		var date time.Time
		dated := false
		for i := range quotaFamilies {
			f := &quotaFamilies[i]
			if len(h[f.reset]) == 0 {
				continue
			}
			if !dated {
				date, dated = responseDate(h, now), true
			}
			if q, ok := familyHint(h, f, now, date); ok && !yield(f.reset, q) {
				return
			}
		}
		if q, ok := shopifyHint(h); ok {
			yield(hdrShopifyCallLimit, q)
		}
	}
}

// familyHint reads family f from h, received at now in a response whose
// Date is date. ok is false when the family's reset and remaining headers
// are both absent.
func familyHint(h http.Header, f *quotaFamily, now, date time.Time) (q quotaHint, ok bool) {
	rv, remV := headerValue(h, f.reset), headerValue(h, f.remaining)
	if rv == "" && remV == "" {
		return q, false
	}
	q = quotaHint{remaining: -1, tokens: f.tokens, consistent: true}
	if n, ok := parseDigits(trimOWS(remV)); ok {
		q.remaining = int64(min(n, math.MaxInt64))
	}
	if lv := headerValue(h, f.limit); lv != "" {
		n, ok := parseDigits(trimOWS(lv))
		switch {
		case !ok:
			q.consistent = false
		default:
			q.limit = int64(min(n, math.MaxInt64))
			q.consistent = q.remaining <= q.limit
		}
	}
	if rv != "" {
		q.reset, q.hasReset = parseReset(rv, f.form, now, date)
	}
	if f.reset == hdrXRateLimitResetAft {
		q.bucket = headerValue(h, hdrXRateLimitBucket)
	}
	return q, true
}

// parseReset reads a reset header value of the given form, received at now
// in a response whose Date is date. The result is never negative: an
// instant in the past is 0. A negative or malformed value is not ok.
func parseReset(v string, form resetForm, now, date time.Time) (time.Duration, bool) {
	v = trimOWS(v)
	switch form {
	case resetDeltaSeconds:
		return parseDecimal(v, time.Second)
	case resetGoDuration:
		if v == "" || !isDigit(v[0]) { // no sign: a negative reset is malformed
			return 0, false
		}
		d, err := time.ParseDuration(v)
		if err != nil && goDurationSyntax(v) {
			return math.MaxInt64, true // too large for a Duration: saturates
		}
		return d, err == nil
	case resetRFC3339:
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return 0, false
		}
		return dateDelay(t, now, date), true
	}
	return parseResetValue(v, now, date)
}

// shopifyLeakRate is the leak rate of Shopify's REST Admin API bucket: two
// requests a second for standard shops (Shopify's "REST Admin API rate
// limits"). Shopify Plus leaks twice as fast. So assuming two is never
// faster than the server.
const shopifyLeakRate = 2

// shopifyHint reads X-Shopify-Shop-Api-Call-Limit, "fill/capacity" of the
// leaky bucket that paces the shop's REST calls. What remains is
// capacity−fill, and the bucket is empty again after fill/leak rate; a full
// bucket has room again after one leak (half a second).
func shopifyHint(h http.Header) (quotaHint, bool) {
	v := trimOWS(headerValue(h, hdrShopifyCallLimit))
	if v == "" {
		return quotaHint{}, false
	}
	fs, cs, found := strings.Cut(v, "/")
	fill, ok1 := parseDigits(fs)
	capacity, ok2 := parseDigits(cs)
	if !found || !ok1 || !ok2 || capacity == 0 || fill > capacity || capacity > math.MaxInt32 {
		return quotaHint{remaining: -1}, true // present but malformed or contradictory
	}
	leak := time.Second / shopifyLeakRate
	q := quotaHint{limit: int64(capacity), window: time.Duration(capacity) * leak,
		remaining: int64(capacity - fill), hasReset: true, consistent: true}
	q.reset = time.Duration(fill) * leak
	if q.remaining == 0 {
		q.reset = leak
	}
	return q, true
}

// rateLimitHints returns the IETF RateLimit items of h as hints, each
// joined with its policy of RateLimit-Policy. (See
// draft-ietf-httpapi-ratelimit-headers-11 §3, §4: a RateLimit item names
// its policy; the policy's q is the limit and qu its unit.) It returns nil
// when the field is absent or malformed. An item whose r exceeds its
// policy's q contradicts it, and is not used for pacing. pk (the partition
// key) names the limit's identity.
func rateLimitHints(h http.Header) []quotaHint {
	vs := h[hdr.RateLimit]
	if len(vs) == 0 {
		return nil
	}
	items, ok := parseRateLimit(vs)
	if !ok {
		return nil
	}
	pols, _ := parseRateLimitPolicy(h[hdr.RateLimitPolicy])
	hints := make([]quotaHint, len(items))
	for i, it := range items {
		q := quotaHint{remaining: it.remaining, reset: it.reset, hasReset: it.hasReset, bucket: it.partition, consistent: true}
		for _, p := range pols {
			if p.name == it.policy && p.partition == it.partition {
				q.limit, q.window, q.tokens = p.quota, p.window, p.unit != "requests"
				q.consistent = q.remaining <= q.limit
				break
			}
		}
		hints[i] = q
	}
	return hints
}

// serverQuota returns what the quota headers of h, received at now, say
// about the pace of the key. It is the tightest of every family present:
//
//   - the IETF RateLimit items with their RateLimit-Policy;
//   - RateLimit-*, and X-RateLimit-* with GitHub's epoch or a delta;
//   - Discord's Reset-After and bucket;
//   - OpenAI's -requests and -tokens, and Anthropic's;
//   - Shopify's call limit.
//
// It comes as a Quota whose Remaining requests may go before Reset (never
// zero when ok). The tightest is a spent quota, any unit (Remaining 0, the
// longest such Reset). Else it is the request quota with the slowest pace
// Reset/(Remaining+1). The server's name for that quota (Discord's bucket,
// the IETF pk) is kept with it. A quota in tokens or other units only
// counts when spent: its remainder says nothing about requests. A family
// whose remaining count exceeds its own limit contradicts itself, and is
// ignored. So are malformed, negative and missing values. ok is false when
// no family can pace. It never reads the body and is safe for concurrent
// use.
func serverQuota(h http.Header, now time.Time) (q throttle.Quota, ok bool) {
	var best quotaHint
	found := false
	consider := func(c quotaHint) {
		if !c.pacing() || (c.tokens && c.remaining > 0) {
			return
		}
		if !found || slower(&c, &best) {
			best, found = c, true
		}
	}
	for _, c := range rateLimitHints(h) {
		consider(c)
	}
	for _, c := range quotaHints(h, now) {
		consider(c)
	}
	if !found {
		return throttle.Quota{}, false
	}
	return throttle.Quota{Limit: int(min(best.limit, math.MaxInt32)), Remaining: int(min(best.remaining, math.MaxInt32)),
		Window: best.window, Reset: best.reset, Bucket: best.bucket}, true
}

// slower reports whether hint a paces requests more slowly than b: a spent
// quota before any other (the longer reset first), else the longer
// interval reset/(remaining+1), compared without division.
func slower(a, b *quotaHint) bool {
	switch {
	case a.remaining == 0 && b.remaining == 0:
		return a.reset > b.reset
	case a.remaining == 0 || b.remaining == 0:
		return a.remaining == 0
	}
	// a.reset/(a.r+1) > b.reset/(b.r+1), in float64: the values are
	// durations and counts, and a tie either way is harmless.
	return float64(a.reset)*float64(b.remaining+1) > float64(b.reset)*float64(a.remaining+1)
}

// epochSecondsFrom and epochMillisFrom tell epoch instants from deltas in
// the reset headers, and resetValueLimit marks the values too large to be
// either; see parseResetValue.
const (
	epochSecondsFrom = 1_000_000_000       // 2001-09-09T01:46:40Z in seconds
	epochMillisFrom  = 1_000_000_000_000   // the same instant in milliseconds
	resetValueLimit  = 100_000_000_000_000 // 1e14 ms: the year 5138
)

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
// An instant is turned into a delay by dateDelay against now and the response's Date,
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
	switch {
	case !ok || n < epochSecondsFrom:
		return d, ok
	case d == math.MaxInt64: // an instant past 2262: more than 236 years away
		return d, true
	}
	return dateDelay(time.Unix(0, 0).Add(d), now, serverDate), true
}

// goDurationSyntax reports whether v is an unsigned Go duration as
// time.ParseDuration reads it ("1h2m3.5s"), whatever its size.
func goDurationSyntax(v string) bool {
	if v == "" {
		return false
	}
	for v != "" {
		i := 0
		for i < len(v) && isDigit(v[i]) {
			i++
		}
		digits := i
		if i < len(v) && v[i] == '.' {
			i++
			for i < len(v) && isDigit(v[i]) {
				i++
			}
		}
		if digits == 0 && i <= 1 {
			return false
		}
		j := i
		for j < len(v) && !isDigit(v[j]) && v[j] != '.' {
			j++
		}
		switch v[i:j] {
		case "ns", "us", "µs", "μs", "ms", "s", "m", "h":
		default:
			return false
		}
		v = v[j:]
	}
	return true
}
