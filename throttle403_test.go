package pace

// GitHub answers its rate limits with a 403 (docs.github.com, "Rate limits
// for the REST API"): a secondary limit with Retry-After, a spent primary
// limit with x-ratelimit-remaining: 0 and x-ratelimit-reset (epoch
// seconds). Either is a throttle of its key, as a 429 is; a 403 without
// them is a final answer.

import (
	"net/http"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace/internal/testhttp"
)

// githubHeaders are the primary-limit headers GitHub sends on every
// response, reset an hour after now.
func githubHeaders(now time.Time, remaining int) []string {
	return []string{
		"X-Ratelimit-Limit", "5000",
		"X-Ratelimit-Remaining", strconv.Itoa(remaining),
		"X-Ratelimit-Used", strconv.Itoa(5000 - remaining),
		"X-Ratelimit-Reset", strconv.FormatInt(now.Add(time.Hour).Unix(), 10),
		"X-Ratelimit-Resource", "core",
	}
}

// TestGitHubSecondaryLimit403PausesTheKey: 5 GETs meet GitHub's secondary
// limit, a 403 with Retry-After: 60 (and a primary quota far from spent);
// 20 more start during the minute. No request reaches the server during the
// 60 s; when they end, one probe leaves alone, and the other 24 follow its
// 200 (paced by the quota it names). All 25 end in 200.
func TestGitHubSecondaryLimit403PausesTheKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		srv := &testhttp.Server{Handle: func(n int, r testhttp.Received) (*http.Response, error) {
			time.Sleep(10 * ms)
			if r.At.Sub(start) < time.Minute {
				h := append([]string{"Retry-After", "60", "Content-Type", "application/json"}, githubHeaders(r.At, 4990)...)
				return testhttp.Response(http.StatusForbidden, h...), nil
			}
			return testhttp.Response(http.StatusOK, githubHeaders(r.At, 4989)...), nil
		}}
		tr := &Transport{Base: srv}
		var wg sync.WaitGroup
		for i := range 25 {
			wg.Go(func() {
				if i >= 5 {
					time.Sleep(time.Duration(i-4) * 2 * time.Second) // 2 s to 40 s into the pause
				}
				code, err := get(t, tr, t.Context(), "https://api.github.test/repos/o/r")
				assert.NoError(t, err, "request %d", i)
				assert.Equal(t, http.StatusOK, code, "request %d", i)
			})
		}
		wg.Wait()
		at := since(start, srv.Requests())
		require.Len(t, at, 30, "5 answered 403, then those 5 and the 20 late ones: %v", at)
		assert.Equal(t, 5, countIn(at, 0, 1), "the first wave")
		assert.Zero(t, countIn(at, 1, time.Minute+10*ms), "requests during the 60 s: %v", at)
		assert.Equal(t, time.Minute+10*ms, at[5], "the probe, when the pause ends")
		assert.Equal(t, 1, countIn(at, time.Minute+10*ms, time.Minute+20*ms), "the probe alone until its answer")
		assert.Equal(t, 24, countIn(at, time.Minute+20*ms, time.Hour), "the rest after the probe's 200")
	})
}

// TestGitHub403WithoutDelayIsFinal: a 403 that names no delay (a missing
// permission) is returned at once, unretried, and pauses nothing: the
// next request leaves at once. With GitHub's primary-limit headers showing
// quota left, it is not retried or counted as a throttle either (the quota
// still paces the key, as on any answer: see Transport, "Quota headers").
func TestGitHub403WithoutDelayIsFinal(t *testing.T) {
	for _, tt := range []struct {
		name   string
		header func(now time.Time) []string
	}{
		{"no headers", func(time.Time) []string { return nil }},
		{"quota left", func(now time.Time) []string { return githubHeaders(now, 4990) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &testhttp.Server{Handle: func(n int, r testhttp.Received) (*http.Response, error) {
					return testhttp.Response(http.StatusForbidden, tt.header(r.At)...), nil
				}}
				var events []Event
				tr := &Transport{Base: srv, OnEvent: func(e Event) { events = append(events, e) }}
				for range 2 {
					code, err := get(t, tr, t.Context(), "https://api.github.test/repos/o/r")
					require.NoError(t, err)
					assert.Equal(t, http.StatusForbidden, code)
				}
				assert.Equal(t, 2, srv.Count(), "one attempt each")
				for _, e := range events {
					assert.NotContains(t, []EventKind{EventRetry, EventThrottle, EventGiveUp}, e.Kind, "%+v", e)
				}
				st := tr.Stats()
				require.Len(t, st, 1)
				assert.Zero(t, st[0].Retries+st[0].Throttles+st[0].GiveUps)
				if tt.header(time.Now()) == nil {
					assert.Empty(t, events, "no wait either")
				}
			})
		})
	}
}

// TestGitHubPrimaryLimit403PausesTheKey: a 403 with x-ratelimit-remaining:
// 0 and x-ratelimit-reset (epoch seconds, 1 to 2 s ahead) pauses the key
// until the reset: 3 GETs start at once, 3 more during the pause; after the
// first wave (the requests sent before the first answer) none reaches the
// server before the reset; then one probe leaves alone, the rest follow
// its 200, and all 6 end in 200. Real time, since the testing/synctest
// clock (the year 2000) gives epoch seconds below those the reset header
// is read as.
func TestGitHubPrimaryLimit403PausesTheKey(t *testing.T) {
	var mu sync.Mutex
	var reset time.Time
	const hold = 50 * ms // the server's time to answer the probe
	srv := &testhttp.Server{Handle: func(n int, r testhttp.Received) (*http.Response, error) {
		mu.Lock()
		if reset.IsZero() {
			reset = time.Unix(r.At.Unix()+2, 0)
		}
		rs := reset
		mu.Unlock()
		if r.At.Before(rs) {
			return testhttp.Response(http.StatusForbidden, "X-Ratelimit-Limit", "60", "X-Ratelimit-Remaining", "0",
				"X-Ratelimit-Reset", strconv.FormatInt(rs.Unix(), 10)), nil
		}
		time.Sleep(hold)
		return testhttp.Response(http.StatusOK), nil
	}}
	tr := &Transport{Base: srv}
	start := time.Now()
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			if i >= 3 {
				time.Sleep(300 * ms)
			}
			code, err := get(t, tr, t.Context(), "https://api.github.test/rate")
			assert.NoError(t, err, "request %d", i)
			assert.Equal(t, http.StatusOK, code, "request %d", i)
		})
	}
	wg.Wait()
	var early, after []time.Time
	for _, r := range srv.Requests() {
		switch {
		case !r.At.Before(reset):
			after = append(after, r.At)
		case r.At.Sub(start) >= 100*ms:
			early = append(early, r.At)
		}
	}
	assert.Empty(t, early, "requests during the pause")
	require.Len(t, after, 6, "every request reached the server after the reset")
	for _, at := range after[1:] {
		assert.GreaterOrEqual(t, at.Sub(after[0]), hold, "a request left before the probe's answer")
	}
}
