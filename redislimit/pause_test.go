package redislimit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/realserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// throttleOnceServer throttles its nth request with Retry-After:
// retryAfter, once, and answers every other at once, but the first that
// comes 1 s or more after the throttle (the probe) only after probeHold
// (zero: at once too); it logs every arrival.
type throttleOnceServer struct {
	nth        int
	retryAfter string
	probeHold  time.Duration

	mu        sync.Mutex
	arrivals  []time.Time
	throttled time.Time // when the 429 was written
	probeEnd  time.Time // when the probe's answer was written
}

func (s *throttleOnceServer) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	now := time.Now()
	s.arrivals = append(s.arrivals, now)
	switch {
	case len(s.arrivals) == s.nth:
		s.throttled = time.Now()
		s.mu.Unlock()
		w.Header().Set("Retry-After", s.retryAfter)
		w.WriteHeader(http.StatusTooManyRequests)
		return
	case !s.throttled.IsZero() && s.probeEnd.IsZero() && now.Sub(s.throttled) >= time.Second:
		if s.probeHold > 0 {
			s.mu.Unlock()
			time.Sleep(s.probeHold)
			s.mu.Lock()
		}
		s.probeEnd = time.Now()
	}
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

const probeHold = 300 * time.Millisecond

// TestSharedPause: four processes' clients (each its own redis.Client,
// Limiter and pace.Transport) send to one host; the server throttles one
// request with Retry-After: 2. No request of any of them reaches it during
// the pause (but those already on their way when the 429 was written),
// and afterwards exactly one probe goes first: nothing else arrives until
// its answer.
func TestSharedPause(t *testing.T) {
	srv := realserver.StartRedis(t)
	api := &throttleOnceServer{nth: 20, retryAfter: "2", probeHold: probeHold}
	hs := httptest.NewServer(api)
	defer hs.Close()
	sendFromProcesses(t, srv.Addr(), pace.TokenBucket(pace.PerSecond(40), 4), hs, 4, 3, 4500*time.Millisecond)

	api.mu.Lock()
	defer api.mu.Unlock()
	require.False(t, api.throttled.IsZero(), "the server never throttled")
	require.False(t, api.probeEnd.IsZero(), "no probe came after the pause")
	const inFlight = 50 * time.Millisecond // sent before the 429 was read
	var late, during, probes, beforeAnswer int
	for _, at := range api.arrivals {
		d := at.Sub(api.throttled)
		switch {
		case d <= 0:
		case d <= inFlight:
			late++
		case d < 2*time.Second:
			during++
		case at.Before(api.probeEnd):
			if probes == 0 {
				probes++
			} else {
				beforeAnswer++
			}
		}
	}
	t.Logf("%d arrivals; after the 429: %d within %v (already on their way), %d during the pause, %d probe, %d before its answer",
		len(api.arrivals), late, inFlight, during, probes, beforeAnswer)
	assert.Zero(t, during, "requests reached the server during the pause")
	assert.Equal(t, 1, probes, "one probe after the pause")
	assert.Zero(t, beforeAnswer, "requests reached the server before the probe's answer")
	assert.Greater(t, len(api.arrivals)-20, 20, "traffic resumed after the probe")
}

// sendFromProcesses plays processes processes (each its own redis.Client,
// Limiter and pace.Transport, sharing limit through the Redis at
// redisAddr), each sending GETs to hs from goroutines goroutines, one
// after another, for d; then it closes hs's client connections.
func sendFromProcesses(t *testing.T, redisAddr string, limit pace.Limit, hs *httptest.Server, processes, goroutines int, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	for range processes {
		lim := newLimiter(t, newClient(t, redisAddr), limit, Options{})
		base := &http.Transport{}
		defer base.CloseIdleConnections()
		client := &http.Client{Transport: &pace.Transport{Base: base, Limiter: lim}}
		for range goroutines {
			wg.Go(func() {
				for ctx.Err() == nil {
					req, _ := http.NewRequestWithContext(ctx, http.MethodGet, hs.URL, nil)
					resp, err := client.Do(req)
					if err == nil {
						resp.Body.Close()
					}
				}
			})
		}
	}
	wg.Wait()
	hs.CloseClientConnections()
}
