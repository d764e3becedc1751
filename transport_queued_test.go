package pace

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace/internal/retryrule"
	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/pacehttp/pace/retry"
)

// TestQueuedCallerWaitsOutPauses: a request marked by retryrule.WithHandBack
// (package batch's HTTP) gets a throttle back at once, unretried, and a
// request of a paused key is refused at once with the rest of the pause,
// nothing sent, so that the caller waits in its own line. Another key goes
// on. Without the mark the Transport sleeps 60 s and retries.
func TestQueuedCallerWaitsOutPauses(t *testing.T) {
	for _, giveUp := range []bool{false, true} {
		t.Run(map[bool]string{false: "response", true: "ErrorOnGiveUp"}[giveUp], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &ctxServer{start: time.Now(), handle: func(_ int, req *http.Request) (*http.Response, error) {
					if req.Header.Get("X-Api-Key") == "a" {
						return testhttp.Response(http.StatusTooManyRequests, "Retry-After", "60"), nil
					}
					return testhttp.Response(http.StatusOK), nil
				}}
				var events []Event
				tr := &Transport{Base: srv, ErrorOnGiveUp: giveUp,
					Key:     func(r *http.Request) string { return r.Header.Get("X-Api-Key") },
					OnEvent: func(ev Event) { events = append(events, ev) }}
				send := func(key string) (*http.Response, error) {
					req, err := http.NewRequestWithContext(retryrule.WithHandBack(t.Context(), retryrule.Pauses{}), "GET", "http://api.test/", nil)
					require.NoError(t, err)
					req.Header.Set("X-Api-Key", key)
					return tr.RoundTrip(req)
				}

				resp, err := send("a")
				if giveUp {
					var ae *AttemptsError
					require.ErrorAs(t, err, &ae)
					require.NotNil(t, ae.Response)
					resp = ae.Response
					assert.Equal(t, 1, ae.Attempts)
				} else {
					require.NoError(t, err)
				}
				assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
				_ = resp.Body.Close()
				assert.Equal(t, []time.Duration{0}, srv.arrivals(), "the throttle is handed back, not retried")
				for _, ev := range events {
					assert.NotEqual(t, EventGiveUp, ev.Kind, "no give-up: the caller retries")
				}

				time.Sleep(10 * time.Second)
				_, err = send("a")
				var we *WaitError
				require.ErrorAs(t, err, &we)
				assert.ErrorIs(t, err, ErrThrottled)
				assert.Equal(t, 50*time.Second, we.Delay, "the rest of the pause")
				assert.Len(t, srv.arrivals(), 1, "nothing sent while the key is paused")

				resp, err = send("b")
				require.NoError(t, err)
				assert.Equal(t, http.StatusOK, resp.StatusCode)
				_ = resp.Body.Close()
			})
		})
	}
}

// TestQueuedCallerBriefPause: a pause of retry.MinThrottlePause (a 429 without a
// delay of a key whose rate adapts) is still slept and retried inside
// RoundTrip for a queued caller, so that the adaptive rate works as before.
func TestQueuedCallerBriefPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &ctxServer{start: time.Now(), handle: func(n int, _ *http.Request) (*http.Response, error) {
			if n == 1 {
				return testhttp.Response(http.StatusTooManyRequests), nil
			}
			return testhttp.Response(http.StatusOK), nil
		}}
		tr := &Transport{Base: srv, Limits: Hosts{"api.test": {Limit: TokenBucket(PerSecond(100), 1)}}}
		code, err := get(t, tr, retryrule.WithHandBack(t.Context(), retryrule.Pauses{}), "http://api.test/")
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, []time.Duration{0, retry.MinThrottlePause}, srv.arrivals())
	})
}
