package pace

// Tests that a server cannot pause a key, or make a request sleep, beyond
// what the Transport allows (new-user trial: one 429 with an epoch in
// microseconds paused its host for the life of the process).

import (
	"net/http"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/pacehttp/pace/retry"
)

// TestTransportResetInMicroseconds: a 429 whose X-RateLimit-Reset is an
// epoch in microseconds (or nanoseconds) 3 s ahead is not read as epoch
// milliseconds centuries ahead: the value is ignored, the 429 is a throttle
// without a delay (the key pauses retry.DefaultThrottlePause), the retry gets the
// 200, and the next request goes at once.
func TestTransportResetInMicroseconds(t *testing.T) {
	units := []struct {
		name  string
		epoch func(time.Time) int64
	}{
		{"µs", time.Time.UnixMicro},
		{"ns", time.Time.UnixNano},
	}
	for _, u := range units {
		t.Run(u.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &testhttp.Server{Handle: func(n int, r testhttp.Received) (*http.Response, error) {
					if n == 1 {
						reset := strconv.FormatInt(u.epoch(time.Now().Add(3*time.Second)), 10)
						return testhttp.Response(http.StatusTooManyRequests, "X-RateLimit-Reset", reset), nil
					}
					return testhttp.Response(http.StatusOK), nil
				}}
				tr := &Transport{Base: srv}
				if code := roundTrip(t, tr, "GET", "http://api.test/"); code != http.StatusOK {
					t.Fatalf("status %d, want 200 after a retry", code)
				}
				if g := gaps(srv.Requests()); len(g) != 1 || g[0] != retry.DefaultThrottlePause {
					t.Errorf("gaps %v, want one of %v", g, retry.DefaultThrottlePause)
				}
				start := time.Now()
				if code := roundTrip(t, tr, "GET", "http://api.test/"); code != http.StatusOK || time.Since(start) != 0 {
					t.Errorf("next request: %d after %v, want 200 at once", code, time.Since(start))
				}
			})
		})
	}
}

// TestTransportCapsTheKeyPause: whatever delay a throttling answer asks for
// (an overflowing Retry-After, a year-9999 date, an epoch in milliseconds
// in the year 5138, a huge retry-after-ms), the answer is returned at once,
// unretried, and its key pauses for MaxRetryAfter, never longer: the next
// request, with MaxWait at least MaxRetryAfter (the defaults), waits
// exactly MaxRetryAfter and is sent.
func TestTransportCapsTheKeyPause(t *testing.T) {
	tests := []struct {
		name          string
		status        int
		header, value string
		maxRetryAfter time.Duration // 0: the default
	}{
		{"Retry-After 20 digits", http.StatusTooManyRequests, "Retry-After", "99999999999999999999", 0},
		{"Retry-After year 9999", http.StatusTooManyRequests, "Retry-After", "Fri, 31 Dec 9999 23:59:59 GMT", 0},
		{"reset epoch ms in 5138", http.StatusTooManyRequests, "X-RateLimit-Reset", "99999999999999", 0},
		{"retry-after-ms huge", http.StatusTooManyRequests, "Retry-After-Ms", "99999999999999999999.5", 0},
		{"503 Retry-After huge", http.StatusServiceUnavailable, "Retry-After", "99999999999999999999", 0},
		{"one hour against 30s", http.StatusTooManyRequests, "Retry-After", "3600", 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &testhttp.Server{Handle: func(n int, r testhttp.Received) (*http.Response, error) {
					if n == 1 {
						return testhttp.Response(tt.status, tt.header, tt.value), nil
					}
					return testhttp.Response(http.StatusOK), nil
				}}
				var throttle, giveUp Event
				tr := &Transport{Base: srv, MaxRetryAfter: tt.maxRetryAfter, MaxWait: tt.maxRetryAfter, OnEvent: func(e Event) {
					switch e.Kind {
					case EventThrottle:
						throttle = e
					case EventGiveUp:
						giveUp = e
					}
				}}
				limit := tt.maxRetryAfter
				if limit == 0 {
					limit = DefaultMaxRetryAfter
				}
				start := time.Now()
				if code := roundTrip(t, tr, "GET", "http://api.test/"); code != tt.status || time.Since(start) != 0 {
					t.Fatalf("first call: %d after %v, want the %d at once", code, time.Since(start), tt.status)
				}
				if giveUp.Reason != retry.ReasonDelayTooLong {
					t.Errorf("give-up reason %q, want %q", giveUp.Reason, retry.ReasonDelayTooLong)
				}
				if throttle.Delay != limit {
					t.Errorf("throttle event paused the key %v, want %v", throttle.Delay, limit)
				}
				if code := roundTrip(t, tr, "GET", "http://api.test/"); code != http.StatusOK {
					t.Fatalf("next call: status %d, want 200", code)
				}
				if g := gaps(srv.Requests()); len(g) != 1 || g[0] != limit {
					t.Errorf("gaps %v, want one of %v (the capped pause)", g, limit)
				}
			})
		})
	}
}

// TestTransportMaxRetryAfterCapsOwnWaits: the waits the Transport chooses
// when the server gives no delay (the pause after a 429, the throttle
// backoff after a 503, the error backoff after a 500, and the escalation of
// consecutive 429s) never exceed MaxRetryAfter.
func TestTransportMaxRetryAfterCapsOwnWaits(t *testing.T) {
	tests := []struct {
		name          string
		status        int
		failures      int
		maxRetryAfter time.Duration
		wantGaps      []time.Duration
	}{
		// Uncapped: 5s (retry.DefaultThrottlePause).
		{"429 without a delay", http.StatusTooManyRequests, 1, time.Second, []time.Duration{time.Second}},
		// Uncapped: 1s (the minimum pause).
		{"429 under a second", http.StatusTooManyRequests, 1, 300 * time.Millisecond, []time.Duration{300 * time.Millisecond}},
		// Uncapped: 5s, then 10s.
		{"consecutive 429s", http.StatusTooManyRequests, 2, 7 * time.Second, []time.Duration{5 * time.Second, 7 * time.Second}},
		// Uncapped: 1s (retry.DefaultThrottleBackoffInitial).
		{"503 without a delay", http.StatusServiceUnavailable, 1, 300 * time.Millisecond, []time.Duration{300 * time.Millisecond}},
		// Uncapped: 100ms, then 200ms.
		{"500", http.StatusInternalServerError, 2, 50 * time.Millisecond, []time.Duration{50 * time.Millisecond, 50 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &testhttp.Server{Handle: func(n int, r testhttp.Received) (*http.Response, error) {
					if n <= tt.failures {
						return testhttp.Response(tt.status), nil
					}
					return testhttp.Response(http.StatusOK), nil
				}}
				tr := &Transport{Base: srv, MaxRetryAfter: tt.maxRetryAfter, Retry: retry.Policy{Jitter: retry.NoJitter}}
				if code := roundTrip(t, tr, "GET", "http://api.test/"); code != http.StatusOK {
					t.Fatalf("status %d, want 200", code)
				}
				g := gaps(srv.Requests())
				if len(g) != len(tt.wantGaps) {
					t.Fatalf("gaps %v, want %v", g, tt.wantGaps)
				}
				for i := range g {
					if g[i] != tt.wantGaps[i] {
						t.Errorf("gaps %v, want %v", g, tt.wantGaps)
						break
					}
				}
			})
		})
	}
}
