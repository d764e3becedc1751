package pace

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// windowLimits are the window limits whose cells track only their latest
// window, alone and as parts of All, beside token buckets and pacers that
// another part holds back past their own slots.
func windowLimits() map[string]Limit {
	return map[string]Limit{
		"fixed window 1/1s":         FixedWindow(Rate{N: 1, Per: time.Second}),
		"fixed window 3/1s":         FixedWindow(PerSecond(3)),
		"sliding counter 1/1s":      SlidingCounter(Rate{N: 1, Per: time.Second}),
		"sliding counter 3/1s":      SlidingCounter(PerSecond(3)),
		"all of two windows":        All(FixedWindow(PerSecond(2)), SlidingCounter(Rate{N: 5, Per: 2 * time.Second})),
		"all of a window, a bucket": All(FixedWindow(PerSecond(2)), TokenBucket(PerSecond(10), 5)),
		"all of a window, a pacer":  All(SlidingCounter(PerSecond(3)), LeakyBucket(PerSecond(20), LeakyOptions{})),
		"all of a log, a bucket":    All(SlidingLog(PerSecond(2)), TokenBucket(PerSecond(10), 5)),
	}
}

// TestWindowQueueCancelLatestFirst: a queue of reservations that waited
// into later windows, cancelled latest first, leaves a window limit
// exactly as before it (Shaper.CancelAt's contract): the same queue booked
// again waits exactly as long. Before, the limit stayed in the latest
// window the queue had reached, and a fixed window of 1/1s made the next
// caller wait 1.9 s where 0.9 s was free.
func TestWindowQueueCancelLatestFirst(t *testing.T) {
	for name, l := range windowLimits() {
		t.Run(name, func(t *testing.T) {
			s, err := NewShaper(l)
			require.NoError(t, err)
			now := time.Date(2026, 1, 1, 0, 0, 0, 100_000_000, time.UTC)
			for s.AllowAt(now, 1) {
			}
			queue := func() []Reservation {
				var rs []Reservation
				for range 7 {
					r, err := s.ReserveAt(now, 1, 0)
					require.NoError(t, err)
					rs = append(rs, r)
				}
				return rs
			}
			first := queue()
			require.Positive(t, first[0].Delay, "the queue waits")
			for i := len(first) - 1; i >= 0; i-- {
				s.CancelAt(now, first[i])
			}
			again := queue()
			for i := range first {
				assert.Equal(t, first[i].Delay, again[i].Delay, "reservation %d", i)
			}
			assert.False(t, s.AllowAt(now, 1), "the window before the queue is still full")
		})
	}
}

// TestWindowBackBounded: a queue deeper than maxBack windows keeps at
// most maxBack earlier states; cancelled latest first, it gives back the
// windows of the last maxBack and stays in the one it reached below them
// (stricter, never looser). A booking at now forgets them all.
func TestWindowBackBounded(t *testing.T) {
	s, err := NewShaper(FixedWindow(Rate{N: 1, Per: time.Second}))
	require.NoError(t, err)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	require.True(t, s.AllowAt(now, 1))
	var rs []Reservation
	for range maxBack + 10 {
		r, err := s.ReserveAt(now, 1, 0)
		require.NoError(t, err)
		rs = append(rs, r)
	}
	require.NotNil(t, s.c.x)
	assert.Len(t, s.c.x.back, maxBack)
	for i := len(rs) - 1; i >= 0; i-- {
		s.CancelAt(now, rs[i])
	}
	r, err := s.ReserveAt(now, 1, 0)
	require.NoError(t, err)
	assert.Equal(t, rs[len(rs)-maxBack-1].Delay, r.Delay, "back to the window of the oldest state kept, empty")

	later := now.Add(time.Duration(len(rs)+5) * time.Second)
	require.True(t, s.AllowAt(later, 1))
	assert.Nil(t, s.c.x, "a booking at now forgets the states of past windows")
}

// TestKeyedWaitWindowMoveUp: under Keyed.Wait, a waiter behind one that
// gives up moves up to the window it gave up (Keyed.Wait's doc: "the later
// ones move up, in whatever order they give up"), for a fixed window and a
// sliding counter. Before, with a fixed window of 1 per 500 ms, the second
// waiter left a whole window late.
func TestKeyedWaitWindowMoveUp(t *testing.T) {
	for name, l := range map[string]Limit{
		"fixed window":    FixedWindow(Rate{N: 1, Per: 500 * time.Millisecond}),
		"sliding counter": SlidingCounter(Rate{N: 1, Per: 500 * time.Millisecond}),
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				k, err := NewKeyed(l, KeyedOptions{})
				require.NoError(t, err)
				start := time.Now()
				_, err = k.Wait(context.Background(), "k", 0) // fills the window
				require.NoError(t, err)
				// The slot the first waiter takes, alone.
				r, err := k.ReserveAt(start, "k", 1, 0)
				require.NoError(t, err)
				k.CancelAt(start, "k", r)
				slot := r.Delay

				ctxA, cancelA := context.WithCancel(context.Background())
				aDone := make(chan error, 1)
				go func() {
					_, err := k.Wait(ctxA, "k", 0)
					aDone <- err
				}()
				synctest.Wait()
				bAt := make(chan time.Duration, 1)
				go func() {
					_, err := k.Wait(context.Background(), "k", 0)
					assert.NoError(t, err)
					bAt <- time.Since(start)
				}()
				synctest.Wait()
				time.Sleep(slot / 4)
				cancelA()
				require.True(t, errors.Is(<-aDone, context.Canceled))
				got := <-bAt
				assert.LessOrEqual(t, got, slot+slot/10, "the second waiter takes the slot the first gave up")
			})
		})
	}
}
