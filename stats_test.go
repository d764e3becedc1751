package pace

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTransportStats counts one key's calls through a throttle, a retry, a
// wait and a give-up, and reports the pace in force and where it comes
// from: the configured limit, then the server's slower quota.
func TestTransportStats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &testhttp.Server{Handle: func(n int, r testhttp.Received) (*http.Response, error) {
			switch {
			case strings.HasSuffix(r.URL, "/fail"):
				return testhttp.Response(http.StatusServiceUnavailable), nil
			case n == 1:
				return testhttp.Response(http.StatusTooManyRequests, "Retry-After", "1"), nil
			case n == 4:
				return testhttp.Response(http.StatusOK, "X-RateLimit-Remaining", "1", "X-RateLimit-Reset", "10"), nil
			}
			return testhttp.Response(http.StatusOK), nil
		}}
		tr := &Transport{Base: srv, MaxAttempts: 2, Limits: Hosts{"api.test": {Limit: TokenBucket(PerSecond(10), 1)}}}
		assert.Empty(t, tr.Stats())
		get := func(path string) {
			req, _ := http.NewRequest("GET", "http://API.test"+path, nil)
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			resp.Body.Close()
		}
		get("/") // 429, a 1 s pause, then 200: one throttle, one retry
		st := tr.Stats()
		require.Len(t, st, 1)
		// The retry slept out the pause itself: no wait before it.
		assert.Equal(t, Stats{Key: "api.test", Host: "api.test", Requests: 1, Admitted: 2,
			Retries: 1, Throttles: 1, Pace: 100 * time.Millisecond, PaceSource: "configured"}, st[0])
		get("/") // a token bucket of burst 1: waits 100 ms
		get("/") // waits 100 ms; answered with a quota of 1 left for 10 s
		st = tr.Stats()
		assert.Equal(t, "quota", st[0].PaceSource)
		assert.Equal(t, 5*time.Second, st[0].Pace, "10 s/(1+1)")
		assert.Equal(t, int64(2), st[0].Waits)
		assert.Equal(t, 200*time.Millisecond, st[0].Waited)
		get("/fail") // waits 5 s for the quota's pace; 503, 503: gives up
		st = tr.Stats()
		require.Len(t, st, 1)
		assert.Equal(t, int64(4), st[0].Requests)
		assert.Equal(t, int64(6), st[0].Admitted)
		assert.Equal(t, int64(2), st[0].Retries)
		assert.Equal(t, int64(1), st[0].GiveUps)
		assert.Equal(t, int64(1), st[0].Throttles)
		assert.GreaterOrEqual(t, st[0].Waited, 5200*time.Millisecond)
	})
}

// TestTransportStatsBounded: attacker-chosen keys cannot grow the stats
// without bound; keys past the cap are counted together under "".
func TestTransportStatsBounded(t *testing.T) {
	base := testhttp.RoundTripperFunc(func(*http.Request) (*http.Response, error) { return testhttp.Response(http.StatusOK), nil })
	tr := &Transport{Base: base, Key: func(r *http.Request) string { return r.Header.Get("X-Api-Key") }}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range maxStatsKeys/2 + 10 {
				req, _ := http.NewRequest("GET", "http://api.test/", nil)
				req.Header.Set("X-Api-Key", strconv.Itoa(g)+"-"+strconv.Itoa(i))
				resp, err := tr.RoundTrip(req)
				if assert.NoError(t, err) {
					resp.Body.Close()
				}
			}
		})
	}
	wg.Wait()
	st := tr.Stats()
	require.Len(t, st, maxStatsKeys+1)
	last := st[maxStatsKeys]
	assert.Equal(t, "", last.Key)
	assert.Equal(t, int64(4*(maxStatsKeys/2+10)-maxStatsKeys), last.Requests)
	total := int64(0)
	for _, s := range st {
		total += s.Requests
	}
	assert.Equal(t, int64(4*(maxStatsKeys/2+10)), total)
}

// BenchmarkTransportStats measures the read of a Transport's Stats with
// 100 keys (paced by a token bucket), while nothing else runs.
func BenchmarkTransportStats(b *testing.B) {
	base := testhttp.RoundTripperFunc(func(*http.Request) (*http.Response, error) { return testhttp.Response(http.StatusOK), nil })
	tr := &Transport{Base: base, Limits: Hosts{"*": {Limit: TokenBucket(PerSecond(1_000_000), 1000)}}}
	for i := range 100 {
		req, _ := http.NewRequest("GET", "http://h"+strconv.Itoa(i)+".test/", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
	}
	b.ReportAllocs()
	for b.Loop() {
		if len(tr.Stats()) != 100 {
			b.Fatal("want 100 keys")
		}
	}
}
