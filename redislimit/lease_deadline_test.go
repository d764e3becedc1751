package redislimit

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacehttp/pace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLeaseDeadlineAtOnce: a leased Wait whose unit lies beyond maxWait
// or ctx's deadline fails at once, as Wait's doc says, naming the delay
// and booking nothing: when its share is spent for a window (2/min, no
// more of the limit free), and when it holds no share and its next
// renewal comes too late.
func TestLeaseDeadlineAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeShares{grant: grantAll(2, 1125*time.Millisecond)}
		ls := newTestLeaser(t, pace.FixedWindow(pace.PerMinute(2)), time.Second, f)
		defer ls.close()
		for range 2 {
			_, err := ls.wait(context.Background(), "k", 0)
			require.NoError(t, err)
		}
		start := time.Now()
		_, err := ls.wait(context.Background(), "k", 300*time.Millisecond)
		assert.Equal(t, time.Duration(0), time.Since(start), "at once")
		require.ErrorIs(t, err, pace.ErrWaitTooLong)
		var we *pace.WaitError
		require.ErrorAs(t, err, &we)
		assert.Greater(t, we.Delay, 50*time.Second, "the window's end")

		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err = ls.wait(ctx, "k", 0)
		cancel()
		assert.Equal(t, time.Duration(0), time.Since(start), "at once")
		require.ErrorIs(t, err, pace.ErrWaitExceedsDeadline)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorAs(t, err, &we)
		assert.Greater(t, we.Delay, 50*time.Second)

		time.Sleep(time.Minute + time.Second)
		for range 2 {
			_, err := ls.wait(context.Background(), "k", time.Millisecond)
			require.NoError(t, err, "the refusals booked nothing")
		}

		// No share: the next renewal is a lease away.
		f.set(func(leaseReq) (leaseReply, error) {
			return leaseReply{lease: 1125 * time.Millisecond, retry: 5 * time.Second}, nil
		})
		start = time.Now()
		_, err = ls.wait(context.Background(), "k2", 300*time.Millisecond)
		assert.Equal(t, time.Duration(0), time.Since(start), "at once, after the first renewal (no time in a bubble)")
		require.ErrorIs(t, err, pace.ErrWaitTooLong)
		require.True(t, errors.As(err, &we))
		assert.Equal(t, time.Second, we.Delay, "the next renewal")
	})
}
