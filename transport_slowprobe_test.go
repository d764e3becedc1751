package pace

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace/internal/testhttp"
)

// TestSlowServerRecoversAfterThrottle: after one 429 with Retry-After: 1,
// a key whose server answers slowly is back to its full concurrency within
// two answer times after the pause, since the probe holds its role until
// its answer comes. Before, a probe held it for a lease of 1 s: with 1.5 s
// answers each probe's lease ran out first, the role passed on, and only
// the latest holder's answer could close the key, so the key sent one
// request a second for good.
func TestSlowServerRecoversAfterThrottle(t *testing.T) {
	for _, answer := range []time.Duration{1500 * time.Millisecond, 5 * time.Second} {
		t.Run(answer.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const callers = 10
				var (
					mu       sync.Mutex
					inFlight int
					full     time.Time // first instant after the pause with every caller in flight
					calls    atomic.Int64
					pauseEnd time.Time
				)
				start := time.Now()
				base := testhttp.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
					n := calls.Add(1)
					mu.Lock()
					inFlight++
					if inFlight == callers && !pauseEnd.IsZero() && full.IsZero() {
						full = time.Now()
					}
					mu.Unlock()
					time.Sleep(answer)
					mu.Lock()
					inFlight--
					mu.Unlock()
					if n == 1 {
						mu.Lock()
						pauseEnd = time.Now().Add(time.Second)
						mu.Unlock()
						return testhttp.Response(http.StatusTooManyRequests, "Retry-After", "1"), nil
					}
					return testhttp.Response(http.StatusOK), nil
				})
				tr := &Transport{Base: base}
				var wg sync.WaitGroup
				for range callers {
					wg.Go(func() {
						for time.Since(start) < 20*answer {
							assert.Equal(t, http.StatusOK, roundTrip(t, tr, http.MethodGet, "http://slow.test/"))
						}
					})
				}
				wg.Wait()
				require.False(t, pauseEnd.IsZero())
				require.False(t, full.IsZero(), "the key never had %d in flight again", callers)
				assert.LessOrEqual(t, full.Sub(pauseEnd), 2*answer,
					"full concurrency %v after the pause ended; want within two answer times", full.Sub(pauseEnd))
				// Full concurrency for most of the 20 answer times: 10 an answer time.
				assert.GreaterOrEqual(t, calls.Load(), int64(callers*15), "requests sent in %v", 20*answer)
			})
		})
	}
}
