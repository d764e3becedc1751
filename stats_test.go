package pace

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/pacehttp/pace/retry"
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
		tr := &Transport{Base: srv, Retry: retry.Policy{MaxAttempts: 2}, Limits: Hosts{"api.test": {Limit: TokenBucket(PerSecond(10), 1)}}}
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
			for i := range maxTableKeys/2 + 10 {
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
	require.Len(t, st, maxTableKeys+1)
	last := st[maxTableKeys]
	assert.Equal(t, "", last.Key)
	assert.Equal(t, int64(4*(maxTableKeys/2+10)-maxTableKeys), last.Requests)
	total := int64(0)
	for _, s := range st {
		total += s.Requests
	}
	assert.Equal(t, int64(4*(maxTableKeys/2+10)), total)
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

// TestTransportStatsGiveUpsWithOneAttempt: a Transport (or a host) with
// MaxAttempts 1 makes no retries, so a final 503 is no give-up: GiveUps
// stays 0 and no EventGiveUp is emitted (under retryable.Install the
// retryablehttp.Client retries it). With MaxAttempts 2 the same answers
// are one give-up (retry.ReasonAttempts). ErrorOnGiveUp still makes the final
// response an *AttemptsError with MaxAttempts 1.
func TestTransportStatsGiveUpsWithOneAttempt(t *testing.T) {
	for _, tt := range []struct {
		name        string
		tr          func() *Transport
		wantGiveUps int64
	}{
		{"MaxAttempts 1", func() *Transport { return &Transport{Retry: retry.Policy{MaxAttempts: 1}} }, 0},
		{"a host's MaxAttempts 1", func() *Transport {
			return &Transport{Retry: retry.Policy{MaxAttempts: 3}, Limits: Hosts{"api.test": {MaxAttempts: 1}}}
		}, 0},
		{"MaxAttempts 1, ErrorOnGiveUp", func() *Transport { return &Transport{Retry: retry.Policy{MaxAttempts: 1}, ErrorOnGiveUp: true} }, 0},
		{"MaxAttempts 2", func() *Transport { return &Transport{Retry: retry.Policy{MaxAttempts: 2}} }, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &testhttp.Server{Handle: func(int, testhttp.Received) (*http.Response, error) {
					return testhttp.Response(http.StatusServiceUnavailable), nil
				}}
				tr := tt.tr()
				tr.Base = srv
				var giveUps []retry.Reason
				tr.OnEvent = func(e Event) {
					if e.Kind == EventGiveUp {
						giveUps = append(giveUps, e.Reason)
					}
				}
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), http.MethodGet, "http://api.test/v1", ""))
				if tr.ErrorOnGiveUp {
					var ae *AttemptsError
					require.ErrorAs(t, err, &ae)
					assert.Equal(t, retry.ReasonAttempts, ae.Reason)
				} else {
					require.NoError(t, err)
					resp.Body.Close()
					assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
				}
				st := tr.Stats()
				require.Len(t, st, 1)
				assert.Equal(t, tt.wantGiveUps, st[0].GiveUps, "Stats.GiveUps")
				assert.Len(t, giveUps, int(tt.wantGiveUps), "EventGiveUp")
			})
		})
	}
}

// TestTransportStatsRetriesSent: Stats.Retries counts the attempts sent
// again, not the retries decided. A request that waited behind its key's
// probe, whose throttled answer counted as its own attempt, sent nothing
// more. 10 concurrent calls to a server that answers every request 503
// with Retry-After: 1: Retries is the server's count less the calls it
// saw at all. Before, every retry decided was counted, sent or not.
func TestTransportStatsRetriesSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &testhttp.Server{Steps: []testhttp.Step{testhttp.Status(http.StatusServiceUnavailable, "Retry-After", "1")}}
		tr := &Transport{Base: srv}
		var wg sync.WaitGroup
		for i := range 10 {
			wg.Go(func() {
				req := newRequest(t, t.Context(), "GET", "http://api.test/", "")
				req.Header.Set("X-Call", strconv.Itoa(i))
				resp, err := tr.RoundTrip(req)
				if err == nil {
					resp.Body.Close()
				}
			})
		}
		wg.Wait()
		calls := map[string]bool{}
		for _, r := range srv.Requests() {
			calls[r.Header.Get("X-Call")] = true
		}
		st := tr.Stats()
		require.Len(t, st, 1)
		assert.Equal(t, int64(10), st[0].Requests)
		assert.Equal(t, int64(srv.Count()), st[0].Admitted, "attempts admitted, all sent")
		assert.Equal(t, int64(srv.Count()-len(calls)), st[0].Retries, "attempts sent again (%d sent by %d calls)", srv.Count(), len(calls))
		assert.Less(t, srv.Count(), 20, "requests behind the probe sent nothing more")
	})
}
