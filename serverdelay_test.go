package pace

import (
	"math"
	"net/http"
	"strconv"
	"testing"
	"time"
)

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
