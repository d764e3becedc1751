package pace

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pacehttp/pace/internal/hdr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rfcNow is the client's clock in hashicorp/go-retryablehttp#144: 30 s before the instant
// "Sun, 06 Nov 1994 08:49:37 GMT" that the examples of RFC 9110 §5.6.7 use.
var rfcNow = time.Date(1994, 11, 6, 8, 49, 7, 0, time.UTC)

// TestRetryAfter checks the exported entry point on one case of each rule:
// every header it reads, the status rule of the reset headers, Date
// handling, saturation and the absence of a delay.
func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	httpDate := func(d time.Duration) string { return now.Add(d).Format(http.TimeFormat) }
	epoch := strconv.FormatInt(now.Add(42*time.Second).Unix(), 10)
	tests := []struct {
		name   string
		resp   *http.Response
		want   time.Duration
		wantOK bool
	}{
		{"nil response", nil, 0, false},
		{"no delay", response(429), 0, false},
		{"delay-seconds", response(429, "Retry-After", "7"), 7 * time.Second, true},
		{"HTTP-date", response(503, "Retry-After", httpDate(30*time.Second)), 30 * time.Second, true},
		{"HTTP-date from a lagging Date", response(429, "Date", httpDate(-10*time.Second), "Retry-After", httpDate(20*time.Second)), 30 * time.Second, true},
		{"past HTTP-date", response(429, "Retry-After", httpDate(-time.Minute)), 0, true},
		{"malformed", response(429, "Retry-After", "-2"), 0, false},
		{"retry-after-ms", response(429, "Retry-After", "2", "retry-after-ms", "1500"), 1500 * time.Millisecond, true},
		{"x-ms-retry-after-ms", response(429, "x-ms-retry-after-ms", "250"), 250 * time.Millisecond, true},
		{"reset header on 429", response(429, "X-RateLimit-Reset", epoch), 42 * time.Second, true},
		{"reset header on 200 with quota left", response(200, "X-RateLimit-Remaining", "3", "X-RateLimit-Reset", epoch), 0, false},
		{"Retry-After on 301", response(301, "Retry-After", "2"), 2 * time.Second, true},
		{"saturates", response(429, "Retry-After", "99999999999999999999"), math.MaxInt64, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d, ok := RetryAfter(tt.resp, now); d != tt.want || ok != tt.wantOK {
				t.Errorf("RetryAfter = %v, %v; want %v, %v", d, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// parseRetryAfter is parseRetryAfterAt for a response without a Date header.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	return parseRetryAfterAt(v, now, time.Time{})
}

func TestParseRetryAfter(t *testing.T) {
	tests := []struct {
		name   string
		v      string
		want   time.Duration
		wantOK bool
	}{
		{"zero", "0", 0, true},
		{"delay-seconds", "120", 120 * time.Second, true},
		{"leading zeros", "007", 7 * time.Second, true},
		{"OWS trimmed", " \t5\t ", 5 * time.Second, true},
		// delay-seconds is 1*DIGIT, so these fall back to backoff.
		{"negative", "-1", 0, false},
		{"fraction (Shopify)", "2.0", 2 * time.Second, true},
		{"fraction rounded up", "1.0000000001", time.Second + 1, true},
		{"empty fraction", "1.", 0, false},
		{"fraction only", ".5", 0, false},
		{"garbage", "soon", 0, false},
		{"plus sign", "+5", 0, false},
		{"unit", "5s", 0, false},
		{"empty", "", 0, false},
		{"only OWS", " \t ", 0, false},
		{"inner space", "5 5", 0, false},
		{"list", "5, 6", 0, false},
		{"vertical tab is not OWS", "\v5", 0, false},
		{"newline is not OWS", "5\n", 0, false},
		{"no-break space is not OWS", "\u00a05", 0, false},
		{"hex", "0x10", 0, false},
		{"fullwidth digit", "５", 0, false},
		// hashicorp/go-retryablehttp#144: the three HTTP-date forms RFC 9110 §5.6.7 requires, each 30 s ahead.
		{"IMF-fixdate", "Sun, 06 Nov 1994 08:49:37 GMT", 30 * time.Second, true},
		{"RFC 850", "Sunday, 06-Nov-94 08:49:37 GMT", 30 * time.Second, true},
		{"asctime", "Sun Nov  6 08:49:37 1994", 30 * time.Second, true},
		{"date at now", "Sun, 06 Nov 1994 08:49:07 GMT", 0, true},
		// a date in the past means retry now.
		{"past date", "Sun, 06 Nov 1994 08:48:07 GMT", 0, true},
		{"far past date", "Thu, 01 Jan 1970 00:00:00 GMT", 0, true},
		{"RFC 850 with another zone", "Sunday, 06-Nov-94 08:49:37 PST", 0, false},
		{"IMF with another zone", "Sun, 06 Nov 1994 08:49:37 UTC", 0, false},
		{"date with trailing garbage", "Sun, 06 Nov 1994 08:49:37 GMT x", 0, false},
		{"ISO 8601 is not an HTTP-date", "1994-11-06T08:49:37Z", 0, false},
		// Saturation: never wraps negative, lands above any cap.
		{"largest exact seconds", strconv.FormatInt(maxDurationSeconds, 10), time.Duration(maxDurationSeconds) * time.Second, true},
		{"one second more saturates", strconv.FormatInt(maxDurationSeconds+1, 10), math.MaxInt64, true},
		{"uint64 overflow saturates", "99999999999999999999", math.MaxInt64, true},
		{"huge then garbage", "99999999999999999999x", 0, false},
		{"far future date", "Fri, 31 Dec 9999 23:59:59 GMT", math.MaxInt64, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseRetryAfter(tt.v, rfcNow)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("parseRetryAfter(%q) = %v, %v; want %v, %v", tt.v, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// TestRFC850TwoDigitYear checks the rule of RFC 9110 §5.6.7 for RFC 850
// dates: the two digits name the year in the current century unless that is
// more than 50 years ahead, then the century before.
func TestRFC850TwoDigitYear(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(year int) time.Time { return time.Date(year, 11, 6, 8, 49, 37, 0, time.UTC) }
	tests := []struct {
		v    string
		want time.Time
	}{
		{"Sunday, 06-Nov-94 08:49:37 GMT", at(1994)},   // 2094 is 68 years ahead
		{"Thursday, 06-Nov-75 08:49:37 GMT", at(2075)}, // 49 years ahead: this century (time.Parse says 1975)
		{"Friday, 06-Nov-26 08:49:37 GMT", at(2026)},
		{"Monday, 06-Nov-00 08:49:37 GMT", at(2000)},
	}
	for _, tt := range tests {
		got, ok := parseHTTPDate(tt.v, now)
		if !ok || !got.Equal(tt.want) {
			t.Errorf("parseHTTPDate(%q) = %v, %v; want %v", tt.v, got, ok, tt.want)
		}
		if d, _ := parseRetryAfter(tt.v, now); d != max(tt.want.Sub(now), 0) {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", tt.v, d, max(tt.want.Sub(now), 0))
		}
	}
}

// TestParseRetryAfterAboveCap checks that a delay too large to represent
// lands above the default cap instead of wrapping to a short or negative wait
// (hashicorp/go-retryablehttp#247).
func TestParseRetryAfterAboveCap(t *testing.T) {
	for _, v := range []string{"3600", "99999999999999999999", strconv.FormatUint(math.MaxUint64, 10)} {
		d, ok := parseRetryAfter(v, rfcNow)
		if !ok || d <= DefaultMaxRetryAfter {
			t.Errorf("parseRetryAfter(%q) = %v, %v; want ok and above the cap %v", v, d, ok, DefaultMaxRetryAfter)
		}
	}
}

func TestDateDelay(t *testing.T) {
	now := rfcNow
	target := now.Add(30 * time.Second)
	tests := []struct {
		name       string
		serverDate time.Time
		want       time.Duration
	}{
		{"no Date header", time.Time{}, 30 * time.Second},
		{"clocks agree", now, 30 * time.Second},
		// The server's clock is 10 s behind ours: its instant is 30 s after
		// its Date, so waiting only target-now = 30 s would be fine, but
		// target-Date = 40 s is what guarantees the server's clock has
		// reached target.
		{"server clock behind", now.Add(-10 * time.Second), 40 * time.Second},
		// The server's clock is 10 s ahead: target-now = 30 s is longer
		// than target-Date = 20 s; the longer wait wins.
		{"server clock ahead", now.Add(10 * time.Second), 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := dateDelay(target, now, tt.serverDate); got != tt.want {
				t.Errorf("dateDelay(now+30s, now, %v) = %v, want %v", tt.serverDate, got, tt.want)
			}
		})
	}
}

func TestParseMillis(t *testing.T) {
	tests := []struct {
		v      string
		want   time.Duration
		wantOK bool
	}{
		{"0", 0, true},
		{"250", 250 * time.Millisecond, true},
		{" 1500 ", 1500 * time.Millisecond, true},
		{"1.5", 1500 * time.Microsecond, true},
		{"0.000001", time.Nanosecond, true},
		{"0.0000001", time.Nanosecond, true}, // finer than 1 ns rounds up, never down
		{"0.0000000", 0, true},
		{"2.5000001", 2500*time.Microsecond + time.Nanosecond, true},
		{"9223372036854", 9223372036854 * time.Millisecond, true},
		{"9223372036855", math.MaxInt64, true},
		{"99999999999999999999999", math.MaxInt64, true},
		{"9223372036854.775807", math.MaxInt64, true},
		{"-1", 0, false},
		{"+1", 0, false},
		{"1.", 0, false},
		{".5", 0, false},
		{"1e3", 0, false},
		{"1.2.3", 0, false},
		{"10ms", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseMillis(tt.v)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("parseMillis(%q) = %v, %v; want %v, %v", tt.v, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestParseResetValue(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	sec := func(off int64) string { return strconv.FormatInt(now.Unix()+off, 10) }
	ms := func(off int64) string { return strconv.FormatInt(now.UnixMilli()+off, 10) }
	tests := []struct {
		name   string
		v      string
		want   time.Duration
		wantOK bool
	}{
		{"delta seconds", "30", 30 * time.Second, true},
		{"delta zero", "0", 0, true},
		{"fractional delta", "1.25", 1250 * time.Millisecond, true},
		{"largest delta", "999999999", 999999999 * time.Second, true},
		{"epoch seconds ahead", sec(42), 42 * time.Second, true},
		{"epoch seconds past", sec(-5), 0, true},
		{"fractional epoch seconds (Discord)", sec(2) + ".5", 2500 * time.Millisecond, true},
		{"smallest epoch seconds is far past", "1000000000", 0, true},
		{"epoch milliseconds ahead", ms(1500), 1500 * time.Millisecond, true},
		{"epoch milliseconds past", ms(-1), 0, true},
		{"epoch ms beyond 2262 saturates, not negative", "99999999999999", math.MaxInt64, true},
		{"epoch seconds beyond 2262 saturate", "99999999999", math.MaxInt64, true},
		{"1e14 and above is malformed", "100000000000000", 0, false},
		{"epoch microseconds are malformed", strconv.FormatInt(now.UnixMicro()+3e6, 10), 0, false},
		{"epoch nanoseconds are malformed", strconv.FormatInt(now.UnixNano()+3e9, 10), 0, false},
		{"fractional 1e14 is malformed", "100000000000000.5", 0, false},
		{"20 digits are malformed", "99999999999999999999", 0, false},
		{"negative", "-30", 0, false},
		{"garbage", "soon", 0, false},
		{"HTTP-date is not a reset value", "Sun, 01 Jun 2025 12:00:30 GMT", 0, false},
		{"empty", "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseResetValue(tt.v, now, time.Time{})
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("parseResetValue(%q) = %v, %v; want %v, %v", tt.v, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestParseRateLimit(t *testing.T) {
	tests := []struct {
		name   string
		lines  []string
		want   []rateLimitItem
		wantOK bool
	}{
		{"draft example", []string{`"default";r=50;t=30`}, []rateLimitItem{{"default", 50, 30 * time.Second, true, ""}}, true},
		{"no window", []string{`"default";r=999;pk=:dHJpYWwxMjEzMjM=:`}, []rateLimitItem{{"default", 999, 0, false, "dHJpYWwxMjEzMjM="}}, true},
		{"token name, spaces", []string{`day ; r=0 ; t=10`}, nil, false}, // SP before ';' is not allowed
		{"token name", []string{`day;r=0;t=10`}, []rateLimitItem{{"day", 0, 10 * time.Second, true, ""}}, true},
		{"two items, two lines", []string{`"a";r=1;t=5`, ` "b";r=0;t=60`}, []rateLimitItem{{"a", 1, 5 * time.Second, true, ""}, {"b", 0, 60 * time.Second, true, ""}}, true},
		{"vendor parameters ignored", []string{`"a";r=0;t=7;acme-burst=?1;x="y";z=1.5;w=@1659578233`}, []rateLimitItem{{"a", 0, 7 * time.Second, true, ""}}, true},
		{"later duplicate wins", []string{`"a";r=3;r=0;t=2`}, []rateLimitItem{{"a", 0, 2 * time.Second, true, ""}}, true},
		{"r missing", []string{`"a";t=30`}, nil, false},
		{"r negative", []string{`"a";r=-1;t=30`}, nil, false},
		{"t negative", []string{`"a";r=0;t=-30`}, nil, false},
		{"t decimal", []string{`"a";r=0;t=1.5`}, nil, false},
		{"t string", []string{`"a";r=0;t="30"`}, nil, false},
		{"integer too long", []string{`"a";r=0;t=1234567890123456`}, nil, false},
		{"name is an integer", []string{`5;r=0;t=1`}, nil, false},
		{"trailing comma", []string{`"a";r=0;t=1,`}, nil, false},
		{"unterminated string", []string{`"a;r=0;t=1`}, nil, false},
		{"inner list", []string{`("a" "b");r=0`}, nil, false},
		{"empty", []string{""}, nil, false},
		{"uppercase key", []string{`"a";R=0`}, nil, false},
		{"escaped quote in name", []string{`"a\"b";r=0;t=3`}, []rateLimitItem{{`a"b`, 0, 3 * time.Second, true, ""}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseRateLimit(tt.lines)
			if ok != tt.wantOK || !equalItems(got, tt.want) {
				t.Errorf("parseRateLimit(%q) = %+v, %v; want %+v, %v", tt.lines, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func equalItems(a, b []rateLimitItem) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestParseRateLimitPolicy(t *testing.T) {
	tests := []struct {
		name   string
		lines  []string
		want   []rateLimitPolicy
		wantOK bool
	}{
		{"two policies", []string{`"burst";q=100;w=60,"daily";q=1000;w=86400`},
			[]rateLimitPolicy{{"burst", 100, "requests", time.Minute, ""}, {"daily", 1000, "requests", 24 * time.Hour, ""}}, true},
		{"unit and partition key", []string{`"peruser";q=65535;qu="content-bytes";w=10;pk=:sdfjLJUOUH==:`},
			[]rateLimitPolicy{{"peruser", 65535, "content-bytes", 10 * time.Second, "sdfjLJUOUH=="}}, true},
		{"no window", []string{`"default";q=100`}, []rateLimitPolicy{{"default", 100, "requests", 0, ""}}, true},
		{"q missing", []string{`"default";w=10`}, nil, false},
		{"zero window", []string{`"default";q=1;w=0`}, nil, false},
		{"qu not a string", []string{`"default";q=1;qu=requests`}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseRateLimitPolicy(tt.lines)
			if ok != tt.wantOK || len(got) != len(tt.want) {
				t.Fatalf("parseRateLimitPolicy(%q) = %+v, %v; want %+v, %v", tt.lines, got, ok, tt.want, tt.wantOK)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("parseRateLimitPolicy(%q)[%d] = %+v, want %+v", tt.lines, i, got[i], tt.want[i])
				}
			}
		})
	}
}

// response builds a response with status and header pairs.
func response(status int, kv ...string) *http.Response {
	h := make(http.Header)
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return &http.Response{StatusCode: status, Header: h}
}

func TestServerDelay(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	httpDate := func(d time.Duration) string { return now.Add(d).Format(http.TimeFormat) }
	epoch := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).Unix(), 10) }
	epochMs := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).UnixMilli(), 10) }
	tests := []struct {
		name       string
		resp       *http.Response
		want       time.Duration
		wantSource string
		wantOK     bool
	}{
		{"nil response", nil, 0, "", false},
		{"no headers", response(429), 0, "", false},
		{"429 delay-seconds", response(429, "Retry-After", "3"), 3 * time.Second, "Retry-After", true},
		{"503 delay-seconds", response(503, "Retry-After", "7"), 7 * time.Second, "Retry-After", true},
		{"any status carries it", response(301, "Retry-After", "2"), 2 * time.Second, "Retry-After", true},
		{"-1 ignored", response(429, "Retry-After", "-1"), 0, "", false},
		{"fractional Retry-After (Shopify)", response(429, "Retry-After", "1.5"), 1500 * time.Millisecond, "Retry-After", true},
		{"Retry-After 1. ignored", response(429, "Retry-After", "1."), 0, "", false},
		{"soon ignored", response(429, "Retry-After", "soon"), 0, "", false},
		{"past date", response(429, "Retry-After", httpDate(-60*time.Second)), 0, "Retry-After", true},
		{"date 30s after Date", response(429, "Date", httpDate(0), "Retry-After", httpDate(30*time.Second)), 30 * time.Second, "Retry-After", true},
		{"date measured from a lagging server Date", response(429, "Date", httpDate(-10*time.Second), "Retry-After", httpDate(20*time.Second)), 30 * time.Second, "Retry-After", true},
		{"malformed Date ignored", response(429, "Date", "yesterday", "Retry-After", httpDate(30*time.Second)), 30 * time.Second, "Retry-After", true},
		{"delay-seconds ignores Date", response(429, "Date", httpDate(-10*time.Second), "Retry-After", "5"), 5 * time.Second, "Retry-After", true},
		{"ms beats Retry-After", response(429, "Retry-After", "2", "retry-after-ms", "1500"), 1500 * time.Millisecond, "Retry-After-Ms", true},
		{"x-ms header", response(429, "x-ms-retry-after-ms", "250"), 250 * time.Millisecond, "X-Ms-Retry-After-Ms", true},
		{"retry-after-ms beats x-ms", response(429, "x-ms-retry-after-ms", "250", "retry-after-ms", "100"), 100 * time.Millisecond, "Retry-After-Ms", true},
		{"bad ms falls through", response(429, "retry-after-ms", "-5", "Retry-After", "2"), 2 * time.Second, "Retry-After", true},
		{"huge saturates", response(429, "Retry-After", "99999999999999999999"), math.MaxInt64, "Retry-After", true},
		{"X-RateLimit-Reset epoch on 429", response(429, "X-RateLimit-Reset", epoch(42*time.Second)), 42 * time.Second, "X-Ratelimit-Reset", true},
		{"X-RateLimit-Reset epoch ms on 503", response(503, "X-RateLimit-Reset", epochMs(1500*time.Millisecond)), 1500 * time.Millisecond, "X-Ratelimit-Reset", true},
		{"X-RateLimit-Reset on 200 with quota left", response(200, "X-RateLimit-Remaining", "5", "X-RateLimit-Reset", epoch(42*time.Second)), 0, "", false},
		{"X-RateLimit-Reset on 200 with quota spent", response(200, "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", epoch(42*time.Second)), 42 * time.Second, "X-Ratelimit-Reset", true},
		{"X-RateLimit-Reset on 500 without remaining", response(500, "X-RateLimit-Reset", "10"), 0, "", false},
		{"RateLimit-Reset delta on 503", response(503, "RateLimit-Reset", "17"), 17 * time.Second, "Ratelimit-Reset", true},
		{"RateLimit-Reset with spent RateLimit-Remaining", response(200, "RateLimit-Remaining", "0", "RateLimit-Reset", "17"), 17 * time.Second, "Ratelimit-Reset", true},
		{"remaining of the other family does not count", response(200, "X-RateLimit-Remaining", "0", "RateLimit-Reset", "17"), 0, "", false},
		{"RateLimit-Reset beats X-RateLimit-Reset", response(429, "X-RateLimit-Reset", "9", "RateLimit-Reset", "4"), 4 * time.Second, "Ratelimit-Reset", true},
		{"IETF r=0 on 200", response(200, "RateLimit", `"default";r=0;t=30`), 30 * time.Second, "Ratelimit", true},
		{"IETF r>0 on 200", response(200, "RateLimit", `"default";r=5;t=30`), 0, "", false},
		{"IETF r>0 on 429", response(429, "RateLimit", `"default";r=5;t=30`), 30 * time.Second, "Ratelimit", true},
		{"IETF longest spent window", response(200, "RateLimit", `"a";r=0;t=10, "b";r=0;t=40, "c";r=3;t=90`), 40 * time.Second, "Ratelimit", true},
		{"IETF r=0 without t", response(429, "RateLimit", `"a";r=0`), 0, "", false},
		{"Retry-After beats IETF", response(429, "Retry-After", "5", "RateLimit", `"a";r=0;t=30`), 5 * time.Second, "Retry-After", true},
		{"IETF beats reset headers", response(429, "RateLimit", `"a";r=0;t=30`, "X-RateLimit-Reset", "3"), 30 * time.Second, "Ratelimit", true},
		{"malformed IETF falls through", response(429, "RateLimit", `"a";t=30`, "X-RateLimit-Reset", "3"), 3 * time.Second, "X-Ratelimit-Reset", true},
		{"bad Retry-After falls through to reset", response(429, "Retry-After", "soon", "X-RateLimit-Reset", "3"), 3 * time.Second, "X-Ratelimit-Reset", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, src, ok := serverDelay(tt.resp, now)
			if d != tt.want || src != tt.wantSource || ok != tt.wantOK {
				t.Errorf("serverDelay = %v, %q, %v; want %v, %q, %v", d, src, ok, tt.want, tt.wantSource, tt.wantOK)
			}
		})
	}
}

// TestServerDelayDateForms is hashicorp/go-retryablehttp#144 at the level of the parser: a 429 whose
// Retry-After is an HTTP-date exactly 30 s after its Date header, in each
// of the three forms, with the clocks in agreement, asks for exactly 30 s.
func TestServerDelayDateForms(t *testing.T) {
	date := "Sun, 06 Nov 1994 08:49:07 GMT" // = rfcNow
	for _, form := range []string{
		"Sun, 06 Nov 1994 08:49:37 GMT",  // IMF-fixdate
		"Sunday, 06-Nov-94 08:49:37 GMT", // RFC 850
		"Sun Nov  6 08:49:37 1994",       // asctime
	} {
		d, src, ok := serverDelay(response(429, "Date", date, "Retry-After", form), rfcNow)
		if d != 30*time.Second || src != hdr.RetryAfter || !ok {
			t.Errorf("serverDelay(Retry-After: %q) = %v, %q, %v; want 30s, %q, true", form, d, src, ok, hdr.RetryAfter)
		}
	}
}

// FuzzParseRetryAfter states the invariants of parseRetryAfterAt for any
// value, any Date header and a client clock anywhere within a second: the
// delay is never negative and is 0 when !ok; the Date never changes whether
// the value is usable and never brings the retry before the named instant
// by the local clock; a Date that is the local clock truncated to the
// second (RFC 9110 §6.6.1), a missing Date and a Date more than a day off
// all give the delay measured from now.
func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"0", "120", "-1", "1.5", " 5", "5s", "", "soon",
		"Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994",
		"99999999999999999999", "Fri, 31 Dec 9999 23:59:59 GMT", "Thu, 01 Jan 1970 00:00:00 GMT"} {
		f.Add(s, "", int64(0))
	}
	f.Add("Sun, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:07 GMT", int64(300*time.Millisecond)) // Date truncated
	f.Add("Sun, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:48:57 GMT", int64(0))                    // Date 10 s behind
	f.Add("Sun, 06 Nov 1994 08:49:08 GMT", "Thu, 01 Jan 1970 00:00:00 GMT", int64(0))                    // Date from 1970
	f.Add("Sun Nov  6 08:49:37 1994", "Sun, 06 Nov 1994 08:49:05 GMT", int64(999_999_999))
	f.Fuzz(func(t *testing.T, v, date string, frac int64) {
		now := rfcNow.Add(time.Duration(uint64(frac) % uint64(time.Second)))
		serverDate, _ := parseHTTPDate(trimOWS(date), now)
		d0, ok0 := parseRetryAfterAt(v, now, time.Time{})
		d, ok := parseRetryAfterAt(v, now, serverDate)
		if d < 0 || (!ok && d != 0) {
			t.Errorf("parseRetryAfterAt(%q, %v, %v) = %v, %v; want d >= 0, and 0 when !ok", v, now, serverDate, d, ok)
		}
		if ok != ok0 || d < d0 {
			t.Errorf("parseRetryAfterAt(%q, %v, Date %v) = %v, %v; without Date %v, %v; want the same ok and no shorter delay", v, now, serverDate, d, ok, d0, ok0)
		}
		if off := now.Sub(serverDate); (serverDate.IsZero() || off > 24*time.Hour || off < -24*time.Hour) && d != d0 {
			t.Errorf("parseRetryAfterAt(%q, %v, Date %v) = %v, want %v as without a Date", v, now, serverDate, d, d0)
		}
		if dt, _ := parseRetryAfterAt(v, now, now.Truncate(time.Second)); dt != d0 {
			t.Errorf("parseRetryAfterAt(%q, %v, Date = now truncated) = %v, want %v as without a Date", v, now, dt, d0)
		}
	})
}

// FuzzDateDelay states the invariants of dateDelay for any instants: never
// negative, never before t by the local clock, never later than the later
// of the two reckonings (from now, from the Date), exactly t − now when the
// Date is now truncated to the second (RFC 9110 §6.6.1), and the Date
// ignored when it is more than a day off.
func FuzzDateDelay(f *testing.F) {
	s := func(d time.Duration) int64 { return int64(d) }
	now := rfcNow.UnixNano()
	f.Add(now+s(30*time.Second), now+s(300*time.Millisecond), now)
	f.Add(now+s(30*time.Second), now, now-s(10*time.Second))
	f.Add(now+s(time.Second), now, int64(0)) // Date from 1970
	f.Add(now-s(time.Minute), now, now)
	f.Add(int64(math.MaxInt64), now, int64(math.MinInt64))
	f.Fuzz(func(t *testing.T, tNs, nowNs, dateNs int64) {
		tt, now, date := time.Unix(0, tNs).UTC(), time.Unix(0, nowNs).UTC(), time.Unix(0, dateNs).UTC()
		fromNow := max(tt.Sub(now), 0)
		d := dateDelay(tt, now, date)
		if d < fromNow || d > max(fromNow, tt.Sub(date)) {
			t.Errorf("dateDelay(%v, %v, %v) = %v, want within [%v, max(that, %v)]", tt, now, date, d, fromNow, tt.Sub(date))
		}
		if got := dateDelay(tt, now, now.Truncate(time.Second)); got != fromNow {
			t.Errorf("dateDelay(%v, %v, now truncated) = %v, want %v", tt, now, got, fromNow)
		}
		if off := now.Sub(date); (off > 24*time.Hour || off < -24*time.Hour) && d != fromNow {
			t.Errorf("dateDelay(%v, %v, %v) = %v, want %v: a Date a day off is ignored", tt, now, date, d, fromNow)
		}
	})
}

func FuzzServerDelay(f *testing.F) {
	f.Add(429, "120", "", "", "", "", "", "")
	f.Add(503, "Sun, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:07 GMT", "", "", "", "", "")
	f.Add(200, "", "", "1500", "", "", "", "")
	f.Add(429, "soon", "", "x", "1000000042", "0", `"a";r=0;t=30`, `"a";q=10;w=1`)
	f.Add(200, "", "", "", "99999999999999999999", "0", `"a";r=0;t=999999999999999`, "")
	f.Add(429, "", "", "", "1748779203000000", "", "", "") // epoch µs
	f.Add(429, "", "", "", "99999999999999", "", "", "")   // the largest epoch ms
	f.Add(503, "-1", "garbage", "1.0000001", "1e12", "-0", `"a";r=0;t=1, b;r=0;t=2`, `"a"`)
	f.Add(429, "Sun, 06 Nov 1994 08:49:08 GMT", "Thu, 01 Jan 1970 00:00:00 GMT", "", "", "", "", "") // Date from 1970
	f.Add(429, "", "Thu, 01 Jan 1970 00:00:00 GMT", "", "1000000042", "", "", "")                    // epoch reset, Date from 1970
	f.Add(429, "", "Sun, 06 Nov 1994 08:48:57 GMT", "", "1000000042", "", "", "")                    // epoch reset, Date 10 s behind
	f.Fuzz(func(t *testing.T, status int, retryAfter, date, ms, reset, remaining, ratelimit, policy string) {
		resp := response(status,
			"Retry-After", retryAfter, "Date", date, "Retry-After-Ms", ms,
			"X-RateLimit-Reset", reset, "X-RateLimit-Remaining", remaining,
			"RateLimit-Reset", reset, "RateLimit-Remaining", remaining,
			"RateLimit", ratelimit, "RateLimit-Policy", policy)
		d, src, ok := serverDelay(resp, rfcNow)
		if d < 0 || (!ok && (d != 0 || src != "")) || (ok && src == "") {
			t.Errorf("serverDelay = %v, %q, %v; want d >= 0, and 0 and no source when !ok", d, src, ok)
		}
		// The Date never decides which header is used, never shortens the
		// delay, and is ignored when it is more than a day off.
		resp.Header.Del("Date")
		d0, src0, ok0 := serverDelay(resp, rfcNow)
		if src != src0 || ok != ok0 || d < d0 {
			t.Errorf("serverDelay = %v, %q, %v; without Date %v, %q, %v; want the same source and no shorter delay", d, src, ok, d0, src0, ok0)
		}
		if sd, _ := parseHTTPDate(trimOWS(date), rfcNow); (sd.IsZero() || rfcNow.Sub(sd) > 24*time.Hour || sd.Sub(rfcNow) > 24*time.Hour) && d != d0 {
			t.Errorf("serverDelay with Date %q = %v, want %v as without it", date, d, d0)
		}
		// A reset value of 1e14 or more (an epoch in µs or ns) is never used.
		if src == hdrRateLimitReset || src == hdrXRateLimitReset {
			intPart, _, _ := strings.Cut(trimOWS(reset), ".")
			if n, _ := parseDigits(intPart); n >= 1e14 {
				t.Errorf("serverDelay used the reset value %q (%v), want it ignored as malformed", reset, d)
			}
		}
		// The policy parser must never panic either, and its windows are positive.
		pols, _ := parseRateLimitPolicy([]string{policy})
		for _, p := range pols {
			if p.quota < 0 || p.window < 0 {
				t.Errorf("parseRateLimitPolicy(%q) = %+v; want non-negative q and w", policy, p)
			}
		}
	})
}

func BenchmarkServerDelayNoHeaders(b *testing.B) {
	resp := response(200, "Content-Type", "application/json")
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		serverDelay(resp, now)
	}
}

func BenchmarkServerDelayRetryAfterDate(b *testing.B) {
	resp := response(429, "Date", "Sun, 06 Nov 1994 08:49:07 GMT", "Retry-After", "Sun, 06 Nov 1994 08:49:37 GMT")
	b.ReportAllocs()
	for b.Loop() {
		serverDelay(resp, rfcNow)
	}
}

// TestDateDelayRFC9110DateResolution checks the rule for the response's
// Date (RFC 9110 §6.6.1), which has a resolution of one second: a Date that
// agrees with the local clock within that resolution is the local clock
// truncated, so an HTTP-date Retry-After (§10.2.3) is measured from now and
// met on time; a Date that disagrees by more is a skewed server clock, and
// the wait is measured from it, never shorter than from now.
func TestDateDelayRFC9110DateResolution(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 700_000_000, time.UTC) // 12:00:00.7
	date := now.Truncate(time.Second)                             // the Date a server sends at now
	target := date.Add(30 * time.Second)                          // Retry-After: Date + 30 s
	tests := []struct {
		name       string
		serverDate time.Time
		want       time.Duration
	}{
		// Before the fix: 30s, 700 ms after the named instant.
		{"Date is now truncated to the second", date, 29300 * time.Millisecond},
		{"Date equals now", now, 29300 * time.Millisecond},
		{"Date 1s behind, within the tolerance", now.Add(-time.Second - dateTolerance + time.Millisecond), 29300 * time.Millisecond},
		{"Date ahead within the tolerance", now.Add(dateTolerance), 29300 * time.Millisecond},
		// Disagreeing by more than the resolution: the server's clock.
		{"Date 1s behind, beyond the tolerance", now.Add(-time.Second - dateTolerance), 30*time.Second + dateTolerance + 300*time.Millisecond},
		{"Date 10s behind", date.Add(-10 * time.Second), 40 * time.Second},
		{"Date 10s ahead", date.Add(10 * time.Second), 29300 * time.Millisecond},
		{"Date 23h behind", date.Add(-23 * time.Hour), 23*time.Hour + 30*time.Second},
		{"no Date", time.Time{}, 29300 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, dateDelay(target, now, tt.serverDate), "dateDelay(Date+30s, now, %v)", tt.serverDate)
		})
	}
}

// TestDateDelayIgnoresDateADayOff checks that a Date more than a day away
// from the local clock is treated as absent: such a header is broken (a
// device without a clock sends 1970), not a skew to correct for, and
// measuring from it would turn a short wait into years.
func TestDateDelayIgnoresDateADayOff(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	target := now.Add(time.Second)
	for _, serverDate := range []time.Time{
		time.Unix(0, 0).UTC(), // before the fix: 55 years
		now.Add(-maxDateSkew - time.Second),
		now.Add(maxDateSkew + time.Second),
		time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
	} {
		assert.Equal(t, time.Second, dateDelay(target, now, serverDate), "dateDelay(now+1s, now, %v)", serverDate)
	}
	// A day exactly is still a skew.
	assert.Equal(t, maxDateSkew+time.Second, dateDelay(target, now, now.Add(-maxDateSkew)))
}

// TestServerDelayRFC9110DateResolution: a 429 whose Retry-After is an
// HTTP-date 30 s after its Date (RFC 9110 §10.2.3), the Date being the
// local clock truncated to the second as servers send it (§6.6.1), asks for
// the time until the named instant, in each of the three forms of §5.6.7.
func TestServerDelayRFC9110DateResolution(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 300_000_000, time.UTC)
	date := now.Truncate(time.Second)
	named := date.Add(30 * time.Second)
	for _, f := range []struct{ name, layout string }{
		{"IMF-fixdate", http.TimeFormat},
		{"RFC 850", "Monday, 02-Jan-06 15:04:05 GMT"},
		{"asctime", time.ANSIC},
	} {
		d, src, ok := serverDelay(response(429, "Date", date.Format(http.TimeFormat), "Retry-After", named.Format(f.layout)), now)
		require.True(t, ok, f.name)
		assert.Equal(t, hdr.RetryAfter, src, f.name)
		late := now.Add(d).Sub(named) // before the fix: 300ms
		assert.True(t, late >= 0 && late <= 50*time.Millisecond, "%s: delay %v is %v after the named instant, want within [0, 50ms]", f.name, d, late)
	}
}

// TestServerDelayDateFrom1970: a response from a server whose clock was
// never set (Date: Thu, 01 Jan 1970 00:00:00 GMT) with a Retry-After
// HTTP-date 1 s ahead asks for 1 s, not the 55 years since 1970.
func TestServerDelayDateFrom1970(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	d, src, ok := serverDelay(response(429,
		"Date", "Thu, 01 Jan 1970 00:00:00 GMT",
		"Retry-After", now.Add(time.Second).Format(http.TimeFormat)), now)
	require.True(t, ok)
	assert.Equal(t, hdr.RetryAfter, src)
	assert.Equal(t, time.Second, d)
}

// TestServerDelayResetHeaderDate: epoch instants in the reset headers
// (GitHub's X-RateLimit-Reset, GitLab's RateLimit-Reset) are measured by
// the same rule as an HTTP-date: a Date that agrees with the local clock to
// its one-second resolution (RFC 9110 §6.6.1) is the local clock, a Date
// further off than that but by less than a day is a skewed server clock,
// and a Date from 1970 is ignored.
func TestServerDelayResetHeaderDate(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 300_000_000, time.UTC)
	date := now.Truncate(time.Second)
	epoch := func(d time.Duration) string { return strconv.FormatInt(date.Add(d).Unix(), 10) }
	epochMs := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).UnixMilli(), 10) }
	httpDate := func(t time.Time) string { return t.Format(http.TimeFormat) }
	tests := []struct {
		name  string
		reset string
		date  string
		want  time.Duration
	}{
		// Before the fix: 42s and 1.8s, measured from the truncated Date.
		{"epoch seconds, Date truncated", epoch(42 * time.Second), httpDate(date), 41700 * time.Millisecond},
		{"epoch ms, Date truncated", epochMs(1500 * time.Millisecond), httpDate(date), 1500 * time.Millisecond},
		// A server clock 10 s behind: the wait is from its clock.
		{"epoch seconds, Date 10s behind", epoch(42 * time.Second), httpDate(date.Add(-10 * time.Second)), 52 * time.Second},
		{"epoch ms, Date 10s behind", epochMs(1500 * time.Millisecond), httpDate(date.Add(-10 * time.Second)), 11800 * time.Millisecond},
		// Before the fix: 55 years (and a pause of DefaultMaxRetryAfter).
		{"epoch seconds, Date from 1970", epoch(time.Second), "Thu, 01 Jan 1970 00:00:00 GMT", 700 * time.Millisecond},
		{"epoch ms, Date from 1970", epochMs(time.Second), "Thu, 01 Jan 1970 00:00:00 GMT", time.Second},
	}
	for _, tt := range tests {
		for _, hdr := range []string{hdrXRateLimitReset, hdrRateLimitReset} {
			t.Run(tt.name+"/"+hdr, func(t *testing.T) {
				d, src, ok := serverDelay(response(429, "Date", tt.date, hdr, tt.reset), now)
				require.True(t, ok)
				assert.Equal(t, hdr, src)
				assert.Equal(t, tt.want, d)
			})
		}
	}
}
