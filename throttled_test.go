package pace

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/stretchr/testify/assert"
)

// TestThrottled: the one test of a throttling answer (RFC 6585 §4, RFC 9110
// §15.6.4): a 429 with or without a delay, a 503 only with one.
func TestThrottled(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		resp      *http.Response
		wantDelay time.Duration
		want      bool
	}{
		{"nil", nil, 0, false},
		{"200", testhttp.Response(http.StatusOK, "Retry-After", "5"), 0, false},
		{"429 without a delay", testhttp.Response(http.StatusTooManyRequests), 0, true},
		{"429 Retry-After", testhttp.Response(http.StatusTooManyRequests, "Retry-After", "7"), 7 * time.Second, true},
		{"429 malformed Retry-After", testhttp.Response(http.StatusTooManyRequests, "Retry-After", "soon"), 0, true},
		{"503 without a delay is an outage", testhttp.Response(http.StatusServiceUnavailable), 0, false},
		{"503 Retry-After", testhttp.Response(http.StatusServiceUnavailable, "Retry-After", "2"), 2 * time.Second, true},
		{"503 retry-after-ms", testhttp.Response(http.StatusServiceUnavailable, "Retry-After-Ms", "1500"), 1500 * time.Millisecond, true},
		{"503 reset header", testhttp.Response(http.StatusServiceUnavailable, "X-RateLimit-Reset", "60"), time.Minute, true},
		{"500 Retry-After", testhttp.Response(http.StatusInternalServerError, "Retry-After", "2"), 0, false},
		// GitHub's rate limits (docs.github.com, "Rate limits for the REST API").
		{"403 without a delay is a refusal", testhttp.Response(http.StatusForbidden), 0, false},
		{"403 secondary limit, Retry-After", testhttp.Response(http.StatusForbidden, "Retry-After", "60",
			"X-Ratelimit-Limit", "5000", "X-Ratelimit-Remaining", "4990", "X-Ratelimit-Reset", epochIn(now, time.Hour)), time.Minute, true},
		{"403 primary limit spent", testhttp.Response(http.StatusForbidden,
			"X-Ratelimit-Limit", "5000", "X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", epochIn(now, 90*time.Second)), 90 * time.Second, true},
		{"403 with a quota left", testhttp.Response(http.StatusForbidden,
			"X-Ratelimit-Limit", "5000", "X-Ratelimit-Remaining", "4990", "X-Ratelimit-Reset", epochIn(now, time.Hour)), 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, ok := Throttled(tt.resp, now)
			assert.Equal(t, tt.want, ok, "ok")
			assert.Equal(t, tt.wantDelay, d, "delay")
		})
	}
}

// epochIn returns the instant d after now in epoch seconds, as GitHub's
// x-ratelimit-reset carries it.
func epochIn(now time.Time, d time.Duration) string {
	return strconv.FormatInt(now.Add(d).Unix(), 10)
}
