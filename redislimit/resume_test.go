package redislimit

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/realserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPauseResumesAtSteadyRate: after a shared pause, a token bucket
// resumes at its steady rate, as package pace's Keyed does
// (algorithm.resume): the probe, then one request per interval, without
// the burst the bucket saved up during the pause (the server's window has
// just been full). Four processes' clients (20/s, burst 5, interval 50 ms)
// send to one host; counted from the server's log.
func TestPauseResumesAtSteadyRate(t *testing.T) {
	srv := realserver.StartRedis(t)
	api := &throttleOnceServer{nth: 10, retryAfter: "1"}
	hs := httptest.NewServer(api)
	defer hs.Close()
	const interval = 50 * time.Millisecond
	sendFromProcesses(t, srv.Addr(), pace.TokenBucket(pace.PerSecond(20), 5), hs, 4, 2, 3*time.Second)

	api.mu.Lock()
	defer api.mu.Unlock()
	require.False(t, api.throttled.IsZero(), "the server never throttled")
	var probe time.Time
	for _, at := range api.arrivals {
		if at.Sub(api.throttled) >= time.Second-50*time.Millisecond {
			probe = at
			break
		}
	}
	require.False(t, probe.IsZero(), "no request after the pause")
	first, half := 0, 0
	for _, at := range api.arrivals {
		d := at.Sub(probe)
		if d >= 0 && d < interval {
			first++
		}
		if d >= 0 && d <= 500*time.Millisecond {
			half++
		}
	}
	t.Logf("%d arrivals; after the probe (%v after the 429): %d within %v, %d within 500 ms",
		len(api.arrivals), probe.Sub(api.throttled).Round(time.Millisecond), first, interval, half)
	assert.LessOrEqual(t, first, 1+1, "the probe and at most one more within the first interval: no saved burst")
	assert.LessOrEqual(t, half, 1+10+1, "steady rate after the probe")
	assert.GreaterOrEqual(t, half, 5, "traffic resumed after the probe")
}
