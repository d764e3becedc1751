package pace

import (
	"net/http"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/pacehttp/pace/retry"
)

// TestBudgetQuietClient is the starved quiet client of the batch-safety
// issue: 50 sequential calls, each answered 503, 503, 200, all succeed with
// the default budget, in 150 attempts; with gRFC A6's token bucket (pace's
// rule before) 2 of the 50 did, in 55 attempts. Once with the default
// backoff (about 150 s of fake time, so the window turns over) and once
// with 1 ms waits, all 100 retries within one TTL: the reserve alone.
func TestBudgetQuietClient(t *testing.T) {
	for _, tt := range []struct {
		name    string
		backoff func() backoff.BackOff // nil: the default
	}{
		{"default backoff", nil},
		{"1ms backoff, one window", constBackOff(time.Millisecond)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &testhttp.Server{Handle: func(n int, _ testhttp.Received) (*http.Response, error) {
					if n%3 == 0 {
						return testhttp.Response(http.StatusOK), nil
					}
					return testhttp.Response(http.StatusServiceUnavailable), nil
				}}
				tr := &Transport{Base: srv, Retry: retry.Policy{NewBackOff: tt.backoff}}
				start, ok := time.Now(), 0
				for range 50 {
					resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "http://api.test/", ""))
					require.NoError(t, err)
					if resp.StatusCode == http.StatusOK {
						ok++
					}
					resp.Body.Close()
				}
				assert.Equal(t, 50, ok, "calls that succeeded")
				assert.Equal(t, 150, srv.Count(), "attempts")
				t.Logf("50/50 in %d attempts, %v of fake time", srv.Count(), time.Since(start))
			})
		})
	}
}

// TestBudgetDeadUpstreamConcurrent: 1,000 concurrent calls to an upstream
// failing every request cost at most 1,000 + 0.2 × 1,000 + 100 (the
// reserve) = 1,300 attempts, not MaxAttempts × 1,000 = 3,000.
func TestBudgetDeadUpstreamConcurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &testhttp.Server{Steps: []testhttp.Step{testhttp.Status(http.StatusServiceUnavailable)}}
		tr := &Transport{Base: srv, Retry: retry.Policy{NewBackOff: constBackOff(time.Millisecond)}}
		var wg sync.WaitGroup
		for range 1000 {
			wg.Go(func() {
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "http://api.test/", ""))
				if assert.NoError(t, err) {
					assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
					resp.Body.Close()
				}
			})
		}
		wg.Wait()
		n := srv.Count()
		assert.LessOrEqual(t, n, 1300, "attempts for 1,000 concurrent calls")
		assert.Greater(t, n, 1000, "the reserve allows some retries")
		t.Logf("%d attempts for 1,000 concurrent calls to a dead upstream", n)
	})
}

// TestBudgetDeadUpstream: 1,000 sequential calls to an upstream failing
// every request, within one TTL: 1,000 attempts plus the reserve's 100
// retries plus one for every five requests (200), 1,300 in all, not
// MaxAttempts × 1,000; and over a minute of a host that stays dead, about
// 10 retries a second more.
func TestBudgetDeadUpstream(t *testing.T) {
	tests := []struct {
		name         string
		budget       retry.Budget
		spacing      time.Duration // between calls
		wantAttempts int
	}{
		{"default budget", retry.Budget{}, 0, 1300},
		{"no budget", retry.Budget{Disabled: true}, 0, 3000},
		// 600 calls over 60 s: 600 first attempts, 120 for the requests,
		// and the reserve refilled as each 10 s window turns over.
		{"default budget, a minute", retry.Budget{}, 100 * time.Millisecond, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &testhttp.Server{Steps: []testhttp.Step{testhttp.Status(http.StatusServiceUnavailable)}}
				tr := &Transport{Base: srv, Retry: retry.Policy{Budget: tt.budget, NewBackOff: constBackOff(time.Millisecond)}}
				giveUps := map[retry.Reason]int{}
				tr.OnEvent = func(e Event) {
					if e.Kind == EventGiveUp {
						giveUps[e.Reason]++
					}
				}
				calls := 1000
				if tt.spacing > 0 {
					calls = 600
				}
				for range calls {
					resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "http://api.test/", ""))
					require.NoError(t, err)
					require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
					resp.Body.Close()
					time.Sleep(tt.spacing)
				}
				n := srv.Count()
				if tt.spacing == 0 {
					assert.Equal(t, tt.wantAttempts, n, "attempts for %d calls", calls)
					if !tt.budget.Disabled {
						assert.Positive(t, giveUps[retry.ReasonBudget], "give-ups for the budget")
					}
					return
				}
				// Retries over 60 s: a reserve per stretch of 9/10 of
				// the TTL (60 s / 9 s: 7 of them, 700) plus 0.2 × 600.
				retries := n - calls
				assert.LessOrEqual(t, retries, 820)
				assert.Greater(t, retries, 500, "the reserve refills as the window turns over")
				t.Logf("600 calls over a minute to a dead host: %d retries", retries)
			})
		})
	}
}

// TestBudgetServerDelayExempt: retries the server scheduled with a delay
// are not held back by a spent budget (here, none at all); the cooldown
// paces them.
func TestBudgetServerDelayExempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &testhttp.Server{Handle: func(n int, r testhttp.Received) (*http.Response, error) {
			if n%2 == 1 {
				return testhttp.Response(http.StatusServiceUnavailable, "Retry-After", "1"), nil
			}
			return testhttp.Response(http.StatusOK), nil
		}}
		tr := &Transport{Base: srv, Retry: retry.Policy{Budget: retry.Budget{MinRetriesPerSec: -1, PercentCanRetry: -1}}}
		for i := range 20 {
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "http://api.test/", ""))
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode, "call %d", i)
			resp.Body.Close()
		}
	})
}

// TestBudgetPerKeyEntry: a key's retry budget lives in the one entry the
// Transport keeps per key, beside its Stats. Each of the first
// maxTableKeys keys has a budget of its own; the keys past them share one
// entry, and so one budget (stricter, never looser), and add no memory.
// A reserve of one retry a second per budget, no share of requests, one
// failing call per key: each of the first keys retries once, and of the
// keys past them only the first does.
func TestBudgetPerKeyEntry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &testhttp.Server{Steps: []testhttp.Step{testhttp.Status(http.StatusInternalServerError)}}
		tr := &Transport{
			Base: srv,
			Key:  func(r *http.Request) string { return r.Header.Get("X-Api-Key") },
			Retry: retry.Policy{
				MaxAttempts: 2, NewBackOff: constBackOff(time.Millisecond),
				Budget: retry.Budget{TTL: time.Second, MinRetriesPerSec: 1, PercentCanRetry: -1},
			},
		}
		call := func(key string) {
			req := newRequest(t, t.Context(), "GET", "http://api.test/", "")
			req.Header.Set("X-Api-Key", key)
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			resp.Body.Close()
		}
		const past = 50
		for i := range maxTableKeys + past {
			call("key-" + strconv.Itoa(i))
		}
		assert.Equal(t, 2*maxTableKeys+2+(past-1), srv.Count(), "attempts: a retry for each of the first keys and one for all past them")
		st := tr.Stats()
		require.Len(t, st, maxTableKeys+1)
		assert.Equal(t, "", st[maxTableKeys].Key)
		assert.Equal(t, int64(past), st[maxTableKeys].Requests)
		assert.Equal(t, int64(1), st[maxTableKeys].Retries, "the keys past the table share one budget")

		last := "key-" + strconv.Itoa(maxTableKeys-1)
		n := srv.Count()
		call(last) // its own budget is spent within the second
		assert.Equal(t, n+1, srv.Count())
		time.Sleep(time.Second) // and whole again after it
		call(last)
		assert.Equal(t, n+3, srv.Count())
	})
}
