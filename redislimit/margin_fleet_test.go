package redislimit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/realserver"
	"github.com/pacehttp/pace/middleware"
	"github.com/pacehttp/pace/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFleetAtMiddlewareSlidingLog: four processes (four Limiters, each
// with its own Redis client and pace.Transport, in this test binary) share
// SlidingLog(PerSecond(5)) per API key through Redis, against pace's
// middleware enforcing exactly that (never 6 in any 1 s per key; 429 with
// Retry-After, no quota fields), at exactly its rate: 500 calls over 4
// keys. A 429 of a request held to its slot widens that key's margin for
// the whole fleet. The 429s and elapsed / (calls / (keys × rate)) are
// logged; the test asserts looser bounds than the target (at most 2 ×
// 429, 1.04 ×), since a stall of the machine delays the requests of
// every key at once, and each key learns its own margin.
func TestFleetAtMiddlewareSlidingLog(t *testing.T) {
	const (
		rate  = 5
		keys  = 4
		calls = 500
		procs = 4
	)
	srv := realserver.StartRedis(t)
	var mu sync.Mutex
	ok, refused := 0, 0
	mw, err := middleware.New(middleware.Options{
		Limit: pace.SlidingLog(pace.PerSecond(rate)), KeyHeader: "X-API-Key", OmitHeaders: true,
		OnLimited: func(w http.ResponseWriter, _ *http.Request, _ middleware.Refusal) {
			mu.Lock()
			refused++
			mu.Unlock()
			w.WriteHeader(http.StatusTooManyRequests)
		},
	})
	require.NoError(t, err)
	hs := httptest.NewServer(mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		ok++
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})))
	defer hs.Close()

	clients := make([]*http.Client, procs)
	for i := range clients {
		lim := newLimiter(t, newClient(t, srv.Addr()), pace.SlidingLog(pace.PerSecond(rate)), Options{Prefix: "fleet:"})
		base := &http.Transport{}
		t.Cleanup(base.CloseIdleConnections)
		clients[i] = &http.Client{Transport: &pace.Transport{Base: base, Limiter: lim, Retry: retry.Policy{MaxAttempts: 10},
			Key: func(r *http.Request) string { return r.Header.Get("X-API-Key") }}}
	}
	jobs := make(chan int, calls)
	for i := range calls {
		jobs <- i
	}
	close(jobs)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	failed := 0
	for _, c := range clients {
		for range keys {
			wg.Go(func() {
				for i := range jobs {
					req, err := http.NewRequestWithContext(ctx, http.MethodGet, hs.URL+"/items/"+strconv.Itoa(i), nil)
					var resp *http.Response
					if err == nil {
						req.Header.Set("X-API-Key", "key"+strconv.Itoa(i%keys))
						if resp, err = c.Do(req); err == nil {
							resp.Body.Close()
						}
					}
					if err != nil || resp.StatusCode != http.StatusNoContent {
						mu.Lock()
						failed++
						mu.Unlock()
					}
				}
			})
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	hs.CloseClientConnections()

	ideal := time.Duration(calls) * time.Second / (keys * rate)
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d processes, %d calls over %d keys at %d/s each: %d × 429, %d failed, %v = %.4f × ideal (%v)",
		procs, calls, keys, rate, refused, failed, elapsed.Round(time.Millisecond), elapsed.Seconds()/ideal.Seconds(), ideal)
	rdb := newClient(t, srv.Addr())
	for k := range keys {
		t.Logf("key%d's learned record: %q", k, rdb.Get(context.Background(), "fleet:{key"+strconv.Itoa(k)+"}:l").Val())
	}
	assert.Zero(t, failed)
	assert.Equal(t, calls, ok)
	assert.LessOrEqual(t, refused, 2*keys, "429s")
	assert.LessOrEqual(t, elapsed.Seconds(), 1.08*ideal.Seconds(), "elapsed")
}
