package pace

import (
	"math"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/pacehttp/pace/retry"
)

// TestAdaptiveRateCubic checks the adaptive rate on explicit instants
// against CUBIC as the AWS SDKs' adaptive retry mode applies it (β 0.7,
// C 0.4): a cut drops the rate to 0.7 of what it was, it is back at that
// rate K = ∛(Wmax·0.3/0.4) seconds later, and it ends once it reaches the
// configured ceiling; repeated cuts stop at the floor of 0.5 a second.
func TestAdaptiveRateCubic(t *testing.T) {
	var a adaptiveRate
	_, ok := a.rate(1)
	assert.False(t, ok, "not adapting before a cut")
	const s = int64(time.Second)
	a.cut(10*s, int64(25*time.Millisecond)) // ceiling 40/s
	r, ok := a.rate(10 * s)
	require.True(t, ok)
	assert.InDelta(t, 28, r, 1e-9, "0.7 × 40")
	k := math.Cbrt(40 * 0.3 / 0.4)
	r, _ = a.rate(10*s + int64(k*float64(s)/2))
	assert.InDelta(t, 0.4*math.Pow(-k/2, 3)+40, r, 1e-6, "C(t−K)³ + Wmax")
	assert.Equal(t, int64(1e9/r), a.interval(10*s+int64(k*float64(s)/2)))
	_, ok = a.rate(10*s + int64(k*float64(s)) + 1)
	assert.False(t, ok, "back at the ceiling: the key no longer adapts")
	// A cut while adapting starts from the rate it has then.
	a.cut(20*s, int64(25*time.Millisecond))
	a.cut(20*s, int64(25*time.Millisecond))
	r, _ = a.rate(20 * s)
	assert.InDelta(t, 40*0.7*0.7, r, 1e-9)
	for range 50 {
		a.cut(20*s, int64(25*time.Millisecond))
	}
	r, _ = a.rate(20 * s)
	assert.Equal(t, adaptiveFloor, r)
}

// TestTransportAdaptsWithoutHints: a server limited by a token bucket of
// 20 a second (burst 5) that answers 429 with no Retry-After and no quota;
// a client configured at twice that. The key's rate adapts (Stats reports
// it), every call succeeds, each throttle without a hint pauses the key
// only briefly, and few calls meet a 429. (The throughput is measured by
// the bench scenario adaptive-2x.)
func TestTransportAdaptsWithoutHints(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		tokens, last := 5.0, time.Now()
		throttled := 0
		base := testhttp.RoundTripperFunc(func(*http.Request) (*http.Response, error) {
			mu.Lock()
			defer mu.Unlock()
			now := time.Now()
			tokens = min(5, tokens+now.Sub(last).Seconds()*20)
			last = now
			if tokens < 1 {
				throttled++
				return testhttp.Response(http.StatusTooManyRequests), nil
			}
			tokens--
			return testhttp.Response(http.StatusOK), nil
		})
		var sources sync.Map
		var pauses []time.Duration
		tr := &Transport{Base: base, Retry: retry.Policy{MaxAttempts: 10},
			Limits: Hosts{"*": {Limit: LeakyBucket(PerSecond(40), LeakyOptions{Queue: 1000})}},
			OnEvent: func(e Event) {
				if e.Kind == EventThrottle {
					mu.Lock()
					pauses = append(pauses, e.Delay)
					mu.Unlock()
				}
			}}
		jobs := make(chan int, 400)
		for i := range 400 {
			jobs <- i
		}
		close(jobs)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range jobs {
					req, _ := http.NewRequest("GET", "http://api.test/", nil)
					resp, err := tr.RoundTrip(req)
					if assert.NoError(t, err) {
						assert.Equal(t, http.StatusOK, resp.StatusCode)
						resp.Body.Close()
					}
					for _, st := range tr.Stats() {
						sources.Store(st.PaceSource, true)
					}
				}
			})
		}
		wg.Wait()
		_, adapted := sources.Load("adaptive")
		assert.True(t, adapted, "the key's pace came from the adaptive rate")
		assert.LessOrEqual(t, throttled, 400/10, "429s")
		for _, d := range pauses {
			assert.Less(t, d, retry.DefaultThrottlePause)
		}
		t.Logf("400 calls: %d × 429, %d throttle pauses", throttled, len(pauses))
	})
}
