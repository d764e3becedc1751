package pace_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/middleware"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ownServer is pace's middleware with limit l, served in memory (no
// network, so that testing/synctest's clock runs it), counting what it
// answers.
type ownServer struct {
	h           http.Handler
	ok, refused atomic.Int64
}

func newOwnServer(t *testing.T, l pace.Limit) *ownServer {
	t.Helper()
	m, err := middleware.New(middleware.Options{Limit: l})
	require.NoError(t, err)
	return &ownServer{h: m.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))}
}

func (s *ownServer) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	s.h.ServeHTTP(rec, r.Clone(r.Context()))
	if rec.Code == http.StatusTooManyRequests {
		s.refused.Add(1)
	} else {
		s.ok.Add(1)
	}
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}

// drive sends n requests from each of g goroutines through c and returns
// how many came back 429.
func drive(t *testing.T, c *http.Client, g, n int) int64 {
	t.Helper()
	var refused atomic.Int64
	var wg sync.WaitGroup
	for range g {
		wg.Go(func() {
			for range n {
				req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://api.test/", nil)
				resp, err := c.Do(req)
				if !assert.NoError(t, err) {
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode == http.StatusTooManyRequests {
					refused.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return refused.Load()
}

// TestExactLimitAgainstOwnMiddleware: a client configured with exactly
// the limit pace's middleware enforces keeps that limit's pace. The
// middleware answers each request of a pacer of 10/s (or a token bucket
// of burst 1) with "RateLimit: r=0;t=1": its next unit comes in 100 ms,
// rounded up to whole seconds (draft-ietf-httpapi-ratelimit-headers
// §3.1.3). The client's own limit waits for that unit already, so the
// spent quota must not pause the key for the whole second. Before, 40
// requests from 4 goroutines took 39 s (1 a second, where 10 are allowed),
// as a new user's trial found; now about 4 s, and 0 × 429. A sliding log
// answers so when its window is full, and a pacer as the client paused a
// second in each window (the batch demo at -rate 10 took 1.7 × ideal).
func TestExactLimitAgainstOwnMiddleware(t *testing.T) {
	pacer := pace.LeakyBucket(pace.PerSecond(10), pace.LeakyOptions{})
	for name, tt := range map[string]struct{ server, client pace.Limit }{
		"leaky bucket 10/s":                    {pacer, pacer},
		"token bucket 10/s burst 1":            {pace.TokenBucket(pace.PerSecond(10), 1), pace.TokenBucket(pace.PerSecond(10), 1)},
		"sliding log 10/s, the client a pacer": {pace.SlidingLog(pace.PerSecond(10)), pacer},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newOwnServer(t, tt.server)
				c := &http.Client{Transport: &pace.Transport{Base: srv, Limits: pace.Hosts{pace.DefaultHost: {Limit: tt.client}}}}
				start := time.Now()
				refused := drive(t, c, 4, 10)
				elapsed := time.Since(start)
				assert.Zero(t, refused, "429s returned")
				assert.Zero(t, srv.refused.Load(), "429s sent by the server")
				assert.Equal(t, int64(40), srv.ok.Load())
				// Ideal: 39 intervals of 100 ms. Generous: a second more.
				assert.LessOrEqual(t, elapsed, 5*time.Second, "40 requests at the server's 10/s")
			})
		})
	}
}

// TestSpentQuotaReleasesAtRate: with no limit configured, a client whose
// key paused for a spent quota lets the requests waiting for its reset
// leave at the quota's steady rate (Window/Limit), not all at once: the
// quota need not be whole at its reset (draft-ietf-httpapi-ratelimit-headers
// §4.1.2). Against pace's middleware pacing 1 a second, 4 goroutines of 3
// requests each meet no 429. Before, 7 to 10 of the 13 were refused, as a
// new user's trial found.
func TestSpentQuotaReleasesAtRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newOwnServer(t, pace.LeakyBucket(pace.PerSecond(1), pace.LeakyOptions{}))
		c := &http.Client{Transport: &pace.Transport{Base: srv}}
		assert.Zero(t, drive(t, c, 1, 1), "the first request teaches the quota")
		assert.Zero(t, drive(t, c, 4, 3), "429s returned")
		assert.Zero(t, srv.refused.Load(), "429s sent by the server")
		assert.Equal(t, int64(13), srv.ok.Load())
	})
}

// TestSpentQuotaPausesBurstOrPhase: a spent quota still pauses a key whose
// limit could send into it: a token bucket with a burst larger than the
// quota (10/s, burst 20, against pace's middleware counting fixed windows
// of 10/s), and a fixed window of the quota's rate whose windows start at
// another phase than the server's. Neither limit spaces each request, so
// its next unit is no promise that the server has one. An adversarial
// review found 1 and 2 × 429 where the key had gone on.
func TestSpentQuotaPausesBurstOrPhase(t *testing.T) {
	t.Run("burst", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := newOwnServer(t, pace.FixedWindow(pace.PerSecond(10)))
			c := &http.Client{Transport: &pace.Transport{Base: srv,
				Limits: pace.Hosts{pace.DefaultHost: {Limit: pace.TokenBucket(pace.PerSecond(10), 20)}}}}
			time.Sleep(100 * time.Millisecond)
			drive(t, c, 1, 20)
			assert.Zero(t, srv.refused.Load(), "429s sent by the server")
		})
	})
	t.Run("phase", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := &phaseServer{n: 10, origin: time.Now().Add(500 * time.Millisecond), win: -1}
			c := &http.Client{Transport: &pace.Transport{Base: srv,
				Limits: pace.Hosts{pace.DefaultHost: {Limit: pace.FixedWindow(pace.PerSecond(10))}}}}
			time.Sleep(700 * time.Millisecond) // the client's window [0 s, 1 s), the server's [0.5 s, 1.5 s)
			drive(t, c, 1, 10)                 // spends the server's window: its last answer r=0;t=1
			drive(t, c, 10, 1)                 // at the client's next window, 1 s: into the server's full one
			assert.Zero(t, srv.refused, "429s sent by the server")
		})
	})
}

// phaseServer counts fixed windows of n a second starting at origin, and
// states them in the IETF RateLimit fields.
type phaseServer struct {
	mu      sync.Mutex
	n       int
	origin  time.Time
	win     int64
	used    int
	refused int
}

func (s *phaseServer) RoundTrip(r *http.Request) (*http.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if w := int64(now.Sub(s.origin) / time.Second); w != s.win {
		s.win, s.used = w, 0
	}
	end := s.origin.Add(time.Duration(s.win+1) * time.Second)
	t := int64((end.Sub(now) + time.Second - 1) / time.Second)
	h := http.Header{}
	h.Set("RateLimit-Policy", fmt.Sprintf(`"default";q=%d;w=1`, s.n))
	code := http.StatusOK
	if s.used < s.n {
		s.used++
	} else {
		code = http.StatusTooManyRequests
		s.refused++
		h.Set("Retry-After", strconv.FormatInt(t, 10))
	}
	h.Set("RateLimit", fmt.Sprintf(`"default";r=%d;t=%d`, s.n-s.used, t))
	return &http.Response{StatusCode: code, Header: h, Body: http.NoBody, Request: r}, nil
}
