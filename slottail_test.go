package pace

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSleepSlotInBubble: inside a testing/synctest bubble, where the clock
// stands still while a goroutine runs, the tail falls back to the timer
// instead of yielding for ever: a wait longer than the tail returns at the
// tail for its caller to look again, a wait within the tail ends at the
// slot, a short interval sleeps on the timer throughout, and a context that
// ends cuts the wait short with a *WaitError naming the whole wait.
func TestSleepSlotInBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		const i = 100 * time.Millisecond
		start := time.Now()
		require.NoError(t, sleepSlot(ctx, "k", 5*time.Millisecond, i, nil))
		assert.Equal(t, 5*time.Millisecond-slotTail, time.Since(start), "up to the tail")
		start = time.Now()
		require.NoError(t, sleepSlot(ctx, "k", slotTail*4/5, i, nil))
		assert.Equal(t, slotTail*4/5, time.Since(start), "through the tail")
		assert.False(t, spinning.Load(), "the tail's role is given back")
		start = time.Now()
		require.NoError(t, sleepSlot(ctx, "k", 5*time.Millisecond, 9*time.Millisecond, nil))
		assert.Equal(t, 5*time.Millisecond, time.Since(start), "an interval under ten tails: the timer alone")

		cctx, cancel := context.WithTimeout(ctx, time.Millisecond)
		defer cancel()
		err := sleepSlot(cctx, "k", 5*time.Millisecond, i, nil)
		var we *WaitError
		require.ErrorAs(t, err, &we)
		assert.Equal(t, 5*time.Millisecond, we.Delay)
		assert.True(t, errors.Is(err, context.DeadlineExceeded))
	})
}

// TestSlotTailYields: the tail yields, so on a single P another goroutine
// runs while a waiter is in its tail; a tail that spun without yielding
// would hold the P until the runtime preempts it (after about 10 ms), and
// an in-process server would starve (the reason a nanosleep tail was
// reverted before).
func TestSlotTailYields(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var ran atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for !stop.Load() {
			ran.Add(1)
			runtime.Gosched()
		}
	})
	start := time.Now()
	require.NoError(t, sleepSlot(context.Background(), "k", slotTail*9/10, 100*time.Millisecond, nil))
	elapsed := time.Since(start)
	n := ran.Load()
	stop.Store(true)
	wg.Wait()
	assert.Positive(t, n, "the other goroutine ran during the tail")
	assert.GreaterOrEqual(t, elapsed, slotTail*9/10, "the tail lasts until the slot")
}
