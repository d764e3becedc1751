package pace

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// cooldown is the Transport's table of paused keys. A server that answers
// 429 or 503 with a delay (or 429 without one) pauses the whole key, so that
// every request of that key, new or already waiting, holds back until then
// instead of each retrying on its own (the thundering herd of case C20).
//
// Only paused keys have entries; an entry whose pause has passed is removed
// when it is next looked at, and the whole table is swept of expired entries
// whenever it has doubled in size since the last sweep, so memory stays
// proportional to the keys paused at once. A pause is at most
// Transport.MaxRetryAfter long. No goroutine is started.
type cooldown struct {
	n  atomic.Int64 // len(until), read without the lock on the fast path
	mu sync.Mutex
	// until maps a key to the end of its pause.
	until map[string]time.Time
	// sweepAt is the size at which the next full sweep runs.
	sweepAt int
}

// minSweep is the table size below which no full sweep runs.
const minSweep = 64

// pauseUntil pauses key until the instant until, or leaves it paused longer
// if it already is (a pause is only ever extended). It reports whether the
// pause was set or extended.
func (c *cooldown) pauseUntil(key string, until, now time.Time) bool {
	if !until.After(now) {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.until == nil {
		c.until = make(map[string]time.Time)
		c.sweepAt = minSweep
	}
	if old, ok := c.until[key]; ok && !until.After(old) {
		return false
	}
	c.until[key] = until
	if len(c.until) >= c.sweepAt {
		for k, u := range c.until {
			if !u.After(now) {
				delete(c.until, k)
			}
		}
		c.sweepAt = max(minSweep, 2*len(c.until))
	}
	c.n.Store(int64(len(c.until)))
	return true
}

// remaining returns how long key stays paused after now; 0 if it is not
// paused.
func (c *cooldown) remaining(key string, now time.Time) time.Duration {
	if c.n.Load() == 0 {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	u, ok := c.until[key]
	if !ok {
		return 0
	}
	if d := u.Sub(now); d > 0 {
		return d
	}
	delete(c.until, key)
	c.n.Store(int64(len(c.until)))
	return 0
}

// wait blocks until key is no longer paused, following any extension made
// while it waits. It fails at once, without waiting, with a *WaitError
// wrapping ErrWaitTooLong when the total wait would exceed maxWait (> 0), or
// errDeadline when it would outlast ctx's deadline; if ctx ends first it
// returns a *WaitError wrapping ctx.Err(). It returns how long it waited.
func (c *cooldown) wait(ctx context.Context, key string, maxWait time.Duration) (time.Duration, error) {
	if c.n.Load() == 0 {
		return 0, nil
	}
	var waited time.Duration
	for {
		d := c.remaining(key, time.Now())
		if d <= 0 {
			return waited, nil
		}
		if maxWait > 0 && d > maxWait-waited {
			return waited, &WaitError{Key: key, Delay: d, Err: ErrWaitTooLong}
		}
		if err := sleepCtx(ctx, key, d); err != nil {
			return waited, err
		}
		waited += d
	}
}

// sleepCtx waits d unless ctx ends first or its deadline comes before d is
// over, in which case it returns at once a *WaitError (wrapping errDeadline,
// which matches ErrWaitExceedsDeadline and context.DeadlineExceeded, or
// ctx.Err()) that records d.
func sleepCtx(ctx context.Context, key string, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return &WaitError{Key: key, Delay: d, Err: err}
	}
	return sleepReserved(ctx, key, d, func() {})
}
