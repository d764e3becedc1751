package pace

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultThrottlePause is how long a whole key pauses after a 429 that
// carries no usable delay (no Retry-After or reset header). Consecutive
// throttles of the same key double it, jittered, up to DefaultBackoffMax.
// [Transport].MaxRetryAfter caps it.
// Five seconds follows the fix in env0/terraform-provider-env0#1127 (case
// C20): a server that gives no hint usually counts in windows of seconds,
// and a shorter pause only buys another 429.
const DefaultThrottlePause = 5 * time.Second

// cooldown is the Transport's table of paused keys. A server that answers
// 429 or 503 with a delay (or 429 without one) pauses the whole key, so that
// every request of that key, new or already waiting, holds back until then
// instead of each retrying on its own (the thundering herd of case C20).
// Consecutive throttles without a delay lengthen the pause (see strikes).
// No request is singled out to probe: when the pause ends, every waiting
// request of the key leaves, paced only by the key's limiter, if any.
//
// A pause never exceeds the Transport's MaxRetryAfter: a server delay
// above it (the response is then returned unretried) pauses the key for
// MaxRetryAfter only, so that no answer, however large or malformed its
// delay, can hold the key's requests, or make them fail with
// ErrWaitTooLong, for longer. The callers apply the cap; pauseUntil takes
// the instant it is given.
//
// Only keys paused, or paused until recently, have entries. An entry is
// kept one pause length after its pause ends, to count consecutive
// throttles, and is then removed when it is next looked at; the whole table
// is swept of such entries whenever it has doubled in size since the last
// sweep. Memory is therefore proportional to the keys throttled within the
// last two pause lengths. No goroutine is started.
type cooldown struct {
	n  atomic.Int64 // len(keys), read without the lock on the fast path
	mu sync.Mutex
	// keys holds the paused keys, and for a while after a pause ends the
	// keys whose last throttle carried no delay (see strikes).
	keys map[string]pauseEntry
	// sweepAt is the size at which the next full sweep runs.
	sweepAt int
}

// pauseEntry is the cooldown of one key.
type pauseEntry struct {
	until   time.Time     // end of the pause
	length  time.Duration // length of the last pause set
	strikes int           // consecutive throttles without a delay
}

// expired reports whether e can be forgotten at now: its pause ended at
// least one pause length ago, so a new throttle no longer counts as
// consecutive.
func (e pauseEntry) expired(now time.Time) bool { return !now.Before(e.until.Add(e.length)) }

// minSweep is the table size below which no full sweep runs.
const minSweep = 64

// strikes returns how many consecutive throttles without a delay key has
// had: throttles each arriving before its previous pause ended or within
// one pause length after. 0 when none.
func (c *cooldown) strikes(key string, now time.Time) int {
	if c.n.Load() == 0 {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.keys[key]; ok && !e.expired(now) {
		return e.strikes
	}
	return 0
}

// pauseUntil pauses key until the instant until, or leaves it paused longer
// if it already is (a pause is only ever extended), and records strikes
// (see strikes; 0 for a throttle that carried a delay). It reports whether
// the pause was set or extended.
func (c *cooldown) pauseUntil(key string, until, now time.Time, strikes int) bool {
	if !until.After(now) {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.keys == nil {
		c.keys = make(map[string]pauseEntry)
		c.sweepAt = minSweep
	}
	e, ok := c.keys[key]
	if ok && !until.After(e.until) {
		if strikes > e.strikes {
			e.strikes = strikes
			c.keys[key] = e
		}
		return false
	}
	c.keys[key] = pauseEntry{until: until, length: until.Sub(now), strikes: strikes}
	if len(c.keys) >= c.sweepAt {
		for k, e := range c.keys {
			if e.expired(now) {
				delete(c.keys, k)
			}
		}
		c.sweepAt = max(minSweep, 2*len(c.keys))
	}
	c.n.Store(int64(len(c.keys)))
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
	e, ok := c.keys[key]
	if !ok {
		return 0
	}
	if d := e.until.Sub(now); d > 0 {
		return d
	}
	if e.expired(now) {
		delete(c.keys, key)
		c.n.Store(int64(len(c.keys)))
	}
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
