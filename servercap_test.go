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
)

// TestTransportResetInMicroseconds: a 429 whose X-RateLimit-Reset is an
// epoch in microseconds (or nanoseconds) 3 s ahead is not read as epoch
// milliseconds centuries ahead: the value is ignored, the 429 is a throttle
// without a delay (the key pauses DefaultThrottlePause), the retry gets the
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
				if g := gaps(srv.Requests()); len(g) != 1 || g[0] != DefaultThrottlePause {
					t.Errorf("gaps %v, want one of %v", g, DefaultThrottlePause)
				}
				start := time.Now()
				if code := roundTrip(t, tr, "GET", "http://api.test/"); code != http.StatusOK || time.Since(start) != 0 {
					t.Errorf("next request: %d after %v, want 200 at once", code, time.Since(start))
				}
			})
		})
	}
}
