package pace

import (
	"math"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/pacehttp/pace/throttle"
)

// TestServerQuota reads one response of each family of quota headers, and
// the rules that pick the tightest and drop what contradicts itself.
func TestServerQuota(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	epoch := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).Unix(), 10) }
	tests := []struct {
		name       string
		resp       *http.Response
		want       throttle.Quota
		wantBucket string
		wantOK     bool
	}{
		{"no headers", response(200), throttle.Quota{}, "", false},
		// GitHub REST API, "Rate limits for the REST API": epoch seconds,
		// on a 200 and on the 403 of a spent primary limit.
		{"GitHub 200", response(200, "X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "4999", "X-RateLimit-Reset", epoch(time.Hour)),
			throttle.Quota{Limit: 5000, Remaining: 4999, Reset: time.Hour}, "", true},
		{"GitHub 403 spent", response(403, "X-RateLimit-Limit", "60", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", epoch(90*time.Second)),
			throttle.Quota{Limit: 60, Remaining: 0, Reset: 90 * time.Second}, "", true},
		{"delta seconds", response(200, "X-RateLimit-Limit", "100", "X-RateLimit-Remaining", "40", "X-RateLimit-Reset", "30"),
			throttle.Quota{Limit: 100, Remaining: 40, Reset: 30 * time.Second}, "", true},
		{"RateLimit-* (draft -06, GitLab)", response(200, "RateLimit-Limit", "10", "RateLimit-Remaining", "9", "RateLimit-Reset", "1"),
			throttle.Quota{Limit: 10, Remaining: 9, Reset: time.Second}, "", true},
		// draft-ietf-httpapi-ratelimit-headers-11 §3, §4: several policies;
		// the tighter pace wins (30 s/(1+1) against 3600 s/(900+1)).
		{"IETF two policies", response(200,
			"RateLimit-Policy", `"burst";q=100;w=60, "daily";q=1000;w=86400`,
			"RateLimit", `"burst";r=1;t=30, "daily";r=900;t=3600`),
			throttle.Quota{Limit: 100, Window: time.Minute, Remaining: 1, Reset: 30 * time.Second}, "", true},
		{"IETF partition key", response(200,
			"RateLimit-Policy", `"peruser";q=10;w=10;pk=:dXNlcjE=:`, "RateLimit", `"peruser";r=5;t=8;pk=:dXNlcjE=:`),
			throttle.Quota{Limit: 10, Window: 10 * time.Second, Remaining: 5, Reset: 8 * time.Second}, "dXNlcjE=", true},
		{"IETF content-bytes counts only when spent", response(200,
			"RateLimit-Policy", `"bytes";q=65535;qu="content-bytes";w=10`, "RateLimit", `"bytes";r=100;t=10`),
			throttle.Quota{}, "", false},
		{"IETF spent tokens pause", response(200,
			"RateLimit-Policy", `"tok";q=1000;qu="tokens";w=60, "req";q=100;w=60`, "RateLimit", `"tok";r=0;t=20, "req";r=99;t=50`),
			throttle.Quota{Limit: 1000, Window: time.Minute, Remaining: 0, Reset: 20 * time.Second}, "", true},
		{"IETF r above q contradicts", response(200, "RateLimit-Policy", `"a";q=10;w=60`, "RateLimit", `"a";r=11;t=60`),
			throttle.Quota{}, "", false},
		{"IETF malformed field ignored", response(200, "RateLimit", `"a";r=-1;t=60`), throttle.Quota{}, "", false},
		// OpenAI, "Rate limits": Go durations for the resets.
		{"OpenAI requests", response(200, "X-Ratelimit-Limit-Requests", "60", "X-Ratelimit-Remaining-Requests", "59",
			"X-Ratelimit-Reset-Requests", "1s", "X-Ratelimit-Limit-Tokens", "150000", "X-Ratelimit-Remaining-Tokens", "149984",
			"X-Ratelimit-Reset-Tokens", "6m0s"),
			throttle.Quota{Limit: 60, Remaining: 59, Reset: time.Second}, "", true},
		{"OpenAI tokens spent", response(200, "X-Ratelimit-Remaining-Requests", "59", "X-Ratelimit-Reset-Requests", "1.5s",
			"X-Ratelimit-Remaining-Tokens", "0", "X-Ratelimit-Reset-Tokens", "6m0s"),
			throttle.Quota{Remaining: 0, Reset: 6 * time.Minute}, "", true},
		{"OpenAI negative reset ignored", response(200, "X-Ratelimit-Remaining-Requests", "5", "X-Ratelimit-Reset-Requests", "-1s"),
			throttle.Quota{}, "", false},
		// Anthropic, "Rate limits": RFC 3339 instants.
		{"Anthropic", response(200, "Anthropic-Ratelimit-Requests-Limit", "50", "Anthropic-Ratelimit-Requests-Remaining", "49",
			"Anthropic-Ratelimit-Requests-Reset", now.Add(1200*time.Millisecond).Format(time.RFC3339Nano)),
			throttle.Quota{Limit: 50, Remaining: 49, Reset: 1200 * time.Millisecond}, "", true},
		{"Anthropic past reset is now", response(200, "Anthropic-Ratelimit-Requests-Remaining", "0",
			"Anthropic-Ratelimit-Requests-Reset", now.Add(-time.Second).Format(time.RFC3339)),
			throttle.Quota{Remaining: 0, Reset: 0}, "", true},
		// Discord, "Rate Limits": fractional seconds and a bucket id.
		{"Discord", response(200, "X-RateLimit-Limit", "5", "X-RateLimit-Remaining", "4", "X-RateLimit-Reset-After", "1.5",
			"X-RateLimit-Bucket", "abcd1234"),
			throttle.Quota{Limit: 5, Remaining: 4, Reset: 1500 * time.Millisecond}, "abcd1234", true},
		// Shopify, "REST Admin API rate limits": a leaky bucket of 40
		// leaking 2 a second.
		{"Shopify", response(200, "X-Shopify-Shop-Api-Call-Limit", "32/40"),
			throttle.Quota{Limit: 40, Window: 20 * time.Second, Remaining: 8, Reset: 16 * time.Second}, "", true},
		{"Shopify full", response(200, "X-Shopify-Shop-Api-Call-Limit", "40/40"),
			throttle.Quota{Limit: 40, Window: 20 * time.Second, Remaining: 0, Reset: 500 * time.Millisecond}, "", true},
		{"Shopify overfull contradicts", response(200, "X-Shopify-Shop-Api-Call-Limit", "41/40"), throttle.Quota{}, "", false},
		{"Shopify garbage", response(200, "X-Shopify-Shop-Api-Call-Limit", "lots"), throttle.Quota{}, "", false},
		// Contradictions and bad values are ignored for pacing.
		{"remaining above limit", response(200, "X-RateLimit-Limit", "10", "X-RateLimit-Remaining", "11", "X-RateLimit-Reset", "5"),
			throttle.Quota{}, "", false},
		{"negative remaining", response(200, "X-RateLimit-Remaining", "-1", "X-RateLimit-Reset", "5"), throttle.Quota{}, "", false},
		{"no reset", response(200, "X-RateLimit-Limit", "10", "X-RateLimit-Remaining", "5"), throttle.Quota{}, "", false},
		{"epoch µs malformed", response(200, "X-RateLimit-Remaining", "5", "X-RateLimit-Reset", "1748779203000000"), throttle.Quota{}, "", false},
		{"one bad family, one good", response(200, "X-RateLimit-Limit", "10", "X-RateLimit-Remaining", "11", "X-RateLimit-Reset", "5",
			"RateLimit", `"a";r=3;t=9`),
			throttle.Quota{Remaining: 3, Reset: 9 * time.Second}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, ok := serverQuota(tt.resp.Header, now)
			assert.Equal(t, tt.wantOK, ok)
			tt.want.Bucket = tt.wantBucket
			assert.Equal(t, tt.want, q)
		})
	}
}

// TestServerDelayVendorFamilies: on a 429, or when the quota is spent, the
// vendor families' resets are delays too.
func TestServerDelayVendorFamilies(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		resp       *http.Response
		want       time.Duration
		wantSource string
		wantOK     bool
	}{
		{"Discord 429", response(429, "X-RateLimit-Reset-After", "0.25"), 250 * time.Millisecond, "X-Ratelimit-Reset-After", true},
		{"OpenAI spent requests", response(200, "X-Ratelimit-Remaining-Requests", "0", "X-Ratelimit-Reset-Requests", "20ms"),
			20 * time.Millisecond, "X-Ratelimit-Reset-Requests", true},
		{"OpenAI not spent, not throttled", response(200, "X-Ratelimit-Remaining-Requests", "3", "X-Ratelimit-Reset-Requests", "20ms"),
			0, "", false},
		{"OpenAI 429 tokens", response(429, "X-Ratelimit-Remaining-Tokens", "10", "X-Ratelimit-Reset-Tokens", "6m0s"),
			6 * time.Minute, "X-Ratelimit-Reset-Tokens", true},
		{"Anthropic 429", response(429, "Anthropic-Ratelimit-Requests-Reset", now.Add(3*time.Second).Format(time.RFC3339)),
			3 * time.Second, "Anthropic-Ratelimit-Requests-Reset", true},
		{"Shopify 429 full", response(429, "X-Shopify-Shop-Api-Call-Limit", "40/40"), 500 * time.Millisecond, hdrShopifyCallLimit, true},
		{"Retry-After first", response(429, "Retry-After", "2.0", "X-RateLimit-Reset-After", "9"), 2 * time.Second, "Retry-After", true},
		{"GitHub 403 spent", response(403, "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", strconv.FormatInt(now.Add(time.Minute).Unix(), 10)),
			time.Minute, "X-Ratelimit-Reset", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, src, ok := serverDelay(tt.resp, now)
			assert.Equal(t, tt.wantOK, ok)
			assert.Equal(t, tt.want, d)
			assert.Equal(t, tt.wantSource, src)
		})
	}
}

// FuzzServerQuota feeds every family arbitrary values: serverQuota never
// panics; what it returns is never negative, never more than the limit it
// names, and comes from a family that can pace (with a remaining count and
// a reset).
func FuzzServerQuota(f *testing.F) {
	f.Add("5000", "4999", "1748779203", "", "", "", "", "", "")
	f.Add("10", "11", "5", `"a";r=3;t=9`, `"a";q=2;w=9`, "59", "6m0s", "2025-06-01T12:00:01Z", "32/40")
	f.Add("", "", "", `"a";r=0;t=99999999999`, "", "0", "-1s", "yesterday", "41/40")
	f.Add("x", "-0", "1e14", `"a";r=1;t=1;pk=:YQ==:`, `"a";q=1;pk=:YQ==:`, "", "1.5s", "", "0/0")
	f.Add("", "0", "0.000000001", "", "", "1", "9999999999h", "9999-12-31T23:59:59Z", "99999999999/99999999999")
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, limit, remaining, reset, ratelimit, policy, oaRemaining, oaReset, anReset, shopify string) {
		resp := response(200,
			"X-RateLimit-Limit", limit, "X-RateLimit-Remaining", remaining, "X-RateLimit-Reset", reset,
			"X-RateLimit-Reset-After", reset, "RateLimit-Limit", limit, "RateLimit-Remaining", remaining,
			"RateLimit-Reset", reset, "RateLimit", ratelimit, "RateLimit-Policy", policy,
			"X-Ratelimit-Remaining-Requests", oaRemaining, "X-Ratelimit-Reset-Requests", oaReset,
			"X-Ratelimit-Remaining-Tokens", oaRemaining, "X-Ratelimit-Reset-Tokens", oaReset,
			"Anthropic-Ratelimit-Requests-Remaining", oaRemaining, "Anthropic-Ratelimit-Requests-Reset", anReset,
			"X-Shopify-Shop-Api-Call-Limit", shopify)
		q, ok := serverQuota(resp.Header, now)
		if !ok {
			if q.Limit != 0 || q.Remaining != 0 || q.Reset != 0 {
				t.Errorf("serverQuota = %+v, false; want the zero Quota", q)
			}
			return
		}
		if q.Remaining < 0 || q.Reset < 0 || q.Limit < 0 || (q.Limit > 0 && q.Remaining > q.Limit) {
			t.Errorf("serverQuota = %+v; want non-negative figures, Remaining <= Limit", q)
		}
		// The tightest hint is no looser than any family that can pace.
		for i := range quotaFamilies {
			h, ok := familyHint(resp.Header, &quotaFamilies[i], now, time.Time{})
			if !ok || !h.pacing() || (h.tokens && h.remaining > 0) || h.remaining > 1<<31-1 {
				continue
			}
			got := quotaHint{remaining: int64(q.Remaining), reset: q.Reset}
			if slower(&h, &got) {
				t.Errorf("serverQuota = %+v, looser than %s's %+v", q, quotaFamilies[i].reset, h)
			}
		}
		// serverDelay reads the same headers and never panics or goes negative.
		resp.StatusCode = http.StatusTooManyRequests
		if d, _, _ := serverDelay(resp, now); d < 0 {
			t.Errorf("serverDelay = %v, want >= 0", d)
		}
	})
}

// TestParseResetGoDuration: a reset in Go's duration syntax (OpenAI's
// x-ratelimit-reset-requests) too large for a Duration saturates, as
// RetryAfter's doc says of every delay, instead of reading as malformed
// (which made the Transport pause a 429 for its default 5 s and retry).
func TestParseResetGoDuration(t *testing.T) {
	now := time.Now()
	for _, tt := range []struct {
		v    string
		want time.Duration
		ok   bool
	}{
		{"1.5s", 1500 * time.Millisecond, true},
		{"3000h", 3000 * time.Hour, true},
		{"3000000h", math.MaxInt64, true},
		{"99999999999999999999ns", math.MaxInt64, true},
		{"1h99999999999999999m", math.MaxInt64, true},
		{"3000000x", 0, false},
		{"3000000", 0, false},
		{"-1s", 0, false},
		{"1h-2m", 0, false},
		{"", 0, false},
	} {
		got, ok := parseReset(tt.v, resetGoDuration, now, time.Time{})
		assert.Equal(t, tt.want, got, tt.v)
		assert.Equal(t, tt.ok, ok, tt.v)
	}
}
