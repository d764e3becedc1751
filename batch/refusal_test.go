package batch

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/pacehttp/pace/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunShortMaxWait: a pace.Transport whose MaxWait is shorter than its
// limit's spacing refuses most attempts at once (pace.ErrWaitTooLong, or
// pace.ErrQueueFull), nothing sent. Those refusals are the client's own,
// not the server's throttle: each item goes back in line for the wait the
// refusal names, the host is never paused and no limit is learned from
// them, so the run keeps the limit's pace. 20 items against a leaky bucket
// of 10/s take 1.9 s (19 gaps of 100 ms), whatever MaxWait and Concurrency.
func TestRunShortMaxWait(t *testing.T) {
	for _, tt := range []struct {
		maxWait     time.Duration
		concurrency int
	}{
		{0, 8}, // DefaultMaxWait: the Transport waits, nothing is refused
		{50 * time.Millisecond, 1},
		{50 * time.Millisecond, 8},
		{300 * time.Millisecond, 8},
		{time.Nanosecond, 8},
	} {
		t.Run(fmt.Sprintf("MaxWait=%v Concurrency=%d", tt.maxWait, tt.concurrency), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var sent atomic.Int32
				client := &http.Client{Transport: &pace.Transport{MaxWait: tt.maxWait,
					Limits: pace.Hosts{"*": {Limit: pace.LeakyBucket(pace.PerSecond(10), pace.LeakyOptions{})}},
					Base: testhttp.RoundTripperFunc(func(*http.Request) (*http.Response, error) {
						sent.Add(1)
						return testhttp.Response(http.StatusOK), nil
					})}}
				t0 := time.Now()
				rep, err := Run(t.Context(), ints(20), HTTP(client, getItem, nil), Options{Concurrency: tt.concurrency})
				elapsed := time.Since(t0)
				t.Logf("%v in %v; %d requests", rep.Summary, elapsed, sent.Load())
				require.NoError(t, err)
				s := rep.Summary
				assert.Equal(t, 20, s.Succeeded)
				assert.Equal(t, 20, int(sent.Load()), "a refusal sends nothing")
				assert.Zero(t, s.Pauses, "a client-side refusal pauses no key")
				assert.Zero(t, s.Requeued, "a refusal is no failure")
				assert.Equal(t, s.Throttled, s.Retries, "every refusal's item was tried again")
				// The attempts refused together wait for the refusal's wait at the
				// gate, so each slot of the limit costs at most Concurrency refusals,
				// not one per item refused so far.
				assert.LessOrEqual(t, s.Throttled, 20*tt.concurrency, "refusals")
				assert.LessOrEqual(t, elapsed, 1900*time.Millisecond+retry.MinThrottlePause,
					"the run keeps the limit's pace: 19 gaps of 100 ms")
				if tt.maxWait > 0 && tt.maxWait < 100*time.Millisecond {
					assert.Positive(t, s.Throttled, "the limit refused waits longer than MaxWait")
				}
			})
		})
	}
}
