package pace

import (
	"context"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/pacehttp/pace/internal/wake"
)

// The waits of pace, in one place: each sleeps on a timer that it stops, and
// ends early when its context does, never holding a lock.

// sleepReserved waits d for a booking already made. It calls cancel to give
// the booking back when the wait is abandoned. That happens at once when d
// would outlast ctx's deadline, or when ctx ends first. No lock is held
// while waiting.
func sleepReserved(ctx context.Context, key string, d time.Duration, cancel func()) error {
	if d <= 0 {
		return nil
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		cancel()
		return &WaitError{Key: key, Delay: d, Err: errDeadline}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		cancel()
		return &WaitError{Key: key, Delay: d, Err: ctx.Err()}
	}
}

// sleepOn waits d, or until wake is closed, whichever comes first. If ctx
// ends first it returns a *WaitError wrapping ctx.Err(), or errDeadline
// when ctx's deadline came.
func sleepOn(ctx context.Context, key string, d time.Duration, ch <-chan struct{}) error {
	if err := wake.Sleep(ctx, d, ch); err != nil {
		return ctxWaitErr(key, d, err)
	}
	return nil
}

// ctxWaitErr is the error of a wait of d cut short by its context's err.
func ctxWaitErr(key string, d time.Duration, err error) error {
	if err == context.DeadlineExceeded {
		err = errDeadline
	}
	return &WaitError{Key: key, Delay: d, Err: err}
}

// slotTail is the last stretch of a wait for a booked slot that is spent
// yielding (runtime.Gosched) rather than on a timer. Go's timers wake up to
// about a millisecond late, and each late wake widens the key's gap.
const slotTail = time.Millisecond

// spinning is held by the one waiter of the process that spends its tail
// yielding; the others sleep on their timers. So the tails cost at most one
// core's slotTail per slot, and yielding leaves every other goroutine its
// turn.
var spinning atomic.Bool

// sleepSlot waits d for a booked slot of a limit that spaces requests
// interval apart, or until ch is closed, as sleepOn does. It returns early,
// before the tail, for its caller to look again. It yields through the
// tail when the interval is at least ten tails. So a tail is at most a
// tenth of each slot. It also needs that no other waiter of the process is
// yielding through its own.
func sleepSlot(ctx context.Context, key string, d, interval time.Duration, ch <-chan struct{}) error {
	if interval < 10*slotTail {
		return sleepOn(ctx, key, d, ch)
	}
	if d > slotTail {
		if err := wake.Sleep(ctx, d-slotTail, ch); err != nil {
			return ctxWaitErr(key, d, err) // the whole wait was cut short
		}
		return nil
	}
	if !spinning.CompareAndSwap(false, true) {
		return sleepOn(ctx, key, d, ch)
	}
	end, ok := yieldUntil(ctx, time.Now().Add(d), ch)
	spinning.Store(false)
	if !ok { // the clock stands still while this goroutine runs: a synctest bubble
		return sleepOn(ctx, key, time.Until(end), ch)
	}
	if err := ctx.Err(); err != nil {
		return ctxWaitErr(key, d, err)
	}
	return nil
}

// yieldUntil yields until end, ctx's end or ch's closing, and returns end;
// false when the clock did not move across a yield.
func yieldUntil(ctx context.Context, end time.Time, ch <-chan struct{}) (time.Time, bool) {
	var prev time.Time
	for {
		now := time.Now()
		if !now.Before(end) {
			return end, true
		}
		if now.Equal(prev) {
			return end, false
		}
		select {
		case <-ch:
			return end, true
		case <-ctx.Done():
			return end, true
		default:
		}
		prev = now
		runtime.Gosched()
	}
}

// waitProbe waits until done is closed (the probe ended). It waits at most
// left (< 0: no bound), and not beyond ctx's deadline. It returns how long
// it waited. When left runs out it fails with a *WaitError wrapping
// ErrWaitTooLong. When the deadline comes it fails with errDeadline. When
// ctx ends otherwise it fails with ctx.Err(). As the probe's end is
// unknown, the error's Delay is 0.
func waitProbe(ctx context.Context, key string, done <-chan struct{}, left time.Duration) (time.Duration, error) {
	bounded, bound, why := left >= 0, left, error(ErrWaitTooLong)
	if dl, ok := ctx.Deadline(); ok {
		if u := time.Until(dl); !bounded || u < bound {
			bounded, bound, why = true, u, errDeadline
		}
	}
	if bounded && bound <= 0 {
		return 0, &WaitError{Key: key, Err: why}
	}
	var timeout <-chan time.Time // nil: no bound
	if bounded {
		t := time.NewTimer(bound)
		defer t.Stop()
		timeout = t.C
	}
	start := time.Now()
	select {
	case <-done:
		return time.Since(start), nil
	case <-timeout:
		return time.Since(start), &WaitError{Key: key, Err: why}
	case <-ctx.Done():
		err := ctx.Err()
		if err == context.DeadlineExceeded { // reached with the timer: the same error
			err = errDeadline
		}
		return time.Since(start), &WaitError{Key: key, Err: err}
	}
}

// sleepCtx waits d, unless ctx ends first or its deadline comes before d is
// over. Then it returns at once a *WaitError that records d. It wraps
// errDeadline, which matches ErrWaitExceedsDeadline and
// context.DeadlineExceeded, or ctx.Err().
func sleepCtx(ctx context.Context, key string, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return &WaitError{Key: key, Delay: d, Err: err}
	}
	return sleepReserved(ctx, key, d, func() {})
}
