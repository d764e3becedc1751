package redislimit

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacehttp/pace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLeaseCloseRefusesSleepers: Waits asleep on a unit of a share when
// the Limiter closes give it back and fail with ErrClosed. Close tells
// Redis the claim ends a span from now, so a request that left after it
// would be counted nowhere. Before, they woke at their unit and returned
// success: a new user's trial saw 28 arrivals in a second against a
// shared limit of 20, the closed process's waiters among them.
func TestLeaseCloseRefusesSleepers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeShares{grant: grantAll(10, 1125*time.Millisecond)}
		ls := newTestLeaser(t, pace.SlidingLog(pace.PerSecond(10)), time.Second, f)
		ctx := context.Background()
		for range 10 {
			_, err := ls.wait(ctx, "k", 0)
			require.NoError(t, err)
		}
		errs := make(chan error, 3)
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				_, err := ls.wait(ctx, "k", 0)
				errs <- err
			})
		}
		synctest.Wait() // asleep on units of the next window
		start := time.Now()
		ls.close()
		wg.Wait()
		assert.Zero(t, time.Since(start), "woken at once, not at their units")
		close(errs)
		for err := range errs {
			require.ErrorIs(t, err, ErrClosed)
			var we *pace.WaitError
			assert.ErrorAs(t, err, &we)
		}
		assert.True(t, f.last().stop, "the share given back")
	})
}
