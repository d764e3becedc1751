package batch

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacehttp/pace"
	"github.com/stretchr/testify/require"
)

// TestCeilingCountsProbeStart: Options.Rate counts a probe's start when it
// leaves, not when it first took the ceiling before waiting out its key's
// pause. Every fifth item's first attempt is throttled with a delay of
// 100 ms; under Rate 10/s no window of 1 s holds more than 10 starts
// (Options.Rate's doc). Before, a new user's trial found 11 within 0.9 s:
// the probe went out on a booking made before the pause.
func TestCeilingCountsProbeStart(t *testing.T) {
	for trial := range 5 {
		synctest.Test(t, func(t *testing.T) {
			var mu sync.Mutex
			var starts []time.Time
			var who []string
			calls := map[int]int{}
			items := make([]int, 40)
			for i := range items {
				items[i] = i
			}
			fn := func(_ context.Context, i int) error {
				mu.Lock()
				starts = append(starts, time.Now())
				calls[i]++
				c := calls[i]
				who = append(who, fmt.Sprintf("%d#%d", i, c))
				mu.Unlock()
				time.Sleep(time.Duration(trial) * time.Millisecond)
				if i%5 == 0 && c == 1 {
					return &ThrottledError{RetryAfter: 100 * time.Millisecond}
				}
				return nil
			}
			_, err := Run(context.Background(), items, fn, Options{Rate: pace.PerSecond(10), Concurrency: 16})
			require.NoError(t, err)
			for i := 10; i < len(starts); i++ {
				require.GreaterOrEqual(t, starts[i].Sub(starts[i-10]), time.Second,
					"11 starts within a second under Rate 10/s: %v", who[i-10:i+1])
			}
		})
	}
}
