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

// TestKeyedQuotaEarliestReset: answers whose resets lie within a second of
// each other name one window, seen through whole seconds (a server rounds
// IETF t up: draft-ietf-httpapi-ratelimit-headers-11 §4.1.2 leaves the
// rounding open), and the key keeps the earliest. Its remainder is spread
// over the time to that reset, and a spent quota pauses the key until it.
// Before, the latest answer's reset was taken, up to a second late.
func TestKeyedQuotaEarliestReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k, err := NewKeyed(Limit{}, KeyedOptions{})
		require.NoError(t, err)
		settle := func(left int, reset time.Duration) {
			k.Settle(throttle.Permit{Key: "a"}, throttle.Outcome{Sent: true, Response: true,
				Quota: throttle.Quota{Remaining: left, Reset: reset}})
		}
		settle(4, 10*time.Second)
		settle(3, 10900*time.Millisecond) // the same reset, rounded up
		start := time.Now()
		p, err := k.Wait(t.Context(), "a", 0)
		require.NoError(t, err)
		k.Settle(p, throttle.Outcome{Sent: true, Response: true})
		assert.Equal(t, 2500*time.Millisecond, time.Since(start), "10 s/(3+1), not 10.9 s/(3+1)")
		settle(0, 7900*time.Millisecond) // spent at 2.5 s, the same reset rounded up
		p, err = k.Wait(t.Context(), "a", 0)
		require.NoError(t, err)
		k.Settle(p, throttle.Outcome{Sent: true, Response: true})
		assert.Equal(t, 10*time.Second, time.Since(start), "paused until the earliest reset")
	})
}
