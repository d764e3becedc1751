package pace

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace/throttle"
)

// TestKeyedQuotaPaceWithoutLimit: a key no limit paces keeps to the pace
// the server's quota asks for also when the pace's slot has come: the
// first request that leaves at once is the pace's latest, so the next ones
// are spaced after it. Before, a request the pace did not delay was not
// recorded, and every request that found the slot come left at once.
func TestKeyedQuotaPaceWithoutLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k, err := NewKeyed(Limit{}, KeyedOptions{})
		require.NoError(t, err)
		// 4 left, reset in 10 s: one request every 2 s.
		k.Settle(throttle.Permit{Key: "a"}, throttle.Outcome{Sent: true, Response: true,
			Quota: throttle.Quota{Remaining: 4, Reset: 10 * time.Second}})
		time.Sleep(5 * time.Second) // the pace's next slot has come
		start := time.Now()
		var mu sync.Mutex
		var at []time.Duration
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				p, err := k.Wait(t.Context(), "a", 0)
				assert.NoError(t, err)
				mu.Lock()
				at = append(at, time.Since(start))
				mu.Unlock()
				k.Settle(p, throttle.Outcome{Sent: true, Response: true})
			})
			synctest.Wait()
		}
		wg.Wait()
		assert.Equal(t, []time.Duration{0, 2 * time.Second, 4 * time.Second}, at)
	})
}
