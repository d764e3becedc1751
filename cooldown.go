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
//
// When the pause ends the key is half-open, as a circuit breaker after its
// open state: the first request to leave is the probe, and every other
// request of the key, waiting or new, holds until the probe's attempt has
// an outcome. A response that is not a throttle (neither a 429 nor a 503
// with a delay) closes the key: all its waiters leave, paced by the key's
// limiter, if any. A throttle pauses the key again (escalated, see
// strikes), and the waiters keep waiting for the next pause end. A probe
// that ends without a response (its context ended, a transport error, its
// body could not be rewound, its limiter refused it) hands the role on at
// once to the next waiter, so that no key is left held. A key paused again
// while its probe was in flight stays half-open, whatever the probe's
// answer. Waiting for a probe counts toward the waiter's maxWait and
// deadline like waiting for a pause: as a probe's end is not known in
// advance, the wait fails when either is reached, not at once.
//
// A pause never exceeds the Transport's MaxRetryAfter: a server delay
// above it (the response is then returned unretried) pauses the key for
// MaxRetryAfter only, so that no answer, however large or malformed its
// delay, can hold the key's requests, or make them fail with
// ErrWaitTooLong, for longer. The callers apply the cap; pauseUntil takes
// the instant it is given.
//
// Only keys paused, half-open, or paused until recently, have entries. An
// entry is kept one pause length after its pause ends, to count
// consecutive throttles, and, once its key is no longer half-open, is then
// removed when it is next looked at. The whole table is swept of entries
// whose pause ended over a pause length ago and that have no probe in
// flight, half-open or not (such a key has no waiter left: a waiter would
// have taken the probe), whenever it has doubled in size since the last
// sweep. Memory is therefore proportional to the keys throttled within the
// last two pause lengths, plus the keys with a probe in flight. No
// goroutine is started; a probe's channel is made only when a key's pause
// has ended and its first request takes the probe.
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
	// halfOpen: the key needs a probe's non-throttle answer before its
	// other requests may leave; set by every pause.
	halfOpen bool
	// probe, when non-nil, is closed when the probe in flight ends.
	probe chan struct{}
}

// expired reports whether e can be forgotten at now: no probe is in
// flight and its pause ended at least one pause length ago, so a new
// throttle no longer counts as consecutive. A half-open key is kept while
// it is looked up (its next request is the probe) and only dropped by a
// sweep of the table, so that keys nobody asks for again cannot
// accumulate; it then has no waiter (a waiter would have taken the probe).
func (e pauseEntry) expired(now time.Time) bool {
	return e.probe == nil && !now.Before(e.until.Add(e.length))
}

// probeOutcome is how a probe's attempt ended.
type probeOutcome int

const (
	probeNone      probeOutcome = iota // no response: the role passes on
	probeThrottled                     // a 429, or a 503 with a delay
	probeAnswered                      // any other response: the key closes
)

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
	c.keys[key] = pauseEntry{until: until, length: until.Sub(now), strikes: strikes, halfOpen: true, probe: e.probe}
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
// paused (it may still be half-open: see held).
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
	c.forget(key, e, now)
	return 0
}

// forget removes key's entry e if it has expired. c.mu is held.
func (c *cooldown) forget(key string, e pauseEntry, now time.Time) {
	if !e.halfOpen && e.expired(now) {
		delete(c.keys, key)
		c.n.Store(int64(len(c.keys)))
	}
}

// held reports whether a request of key must go back to wait before it is
// sent, at now: the key is paused, or, unless the request is the key's
// probe, half-open.
func (c *cooldown) held(key string, now time.Time, probe bool) bool {
	if c.n.Load() == 0 {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.keys[key]
	return ok && (e.until.After(now) || (!probe && e.halfOpen))
}

// next tells a request of key what to do at now: wait d (the key is
// paused), wait for the probe in flight to close probe, leave as the probe
// (isProbe; the role is then taken), or leave (all zero).
func (c *cooldown) next(key string, now time.Time) (d time.Duration, probe chan struct{}, isProbe bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.keys[key]
	switch {
	case !ok:
		return 0, nil, false
	case e.until.After(now):
		return e.until.Sub(now), nil, false
	case e.probe != nil:
		return 0, e.probe, false
	case e.halfOpen:
		e.probe = make(chan struct{})
		c.keys[key] = e
		return 0, nil, true
	}
	c.forget(key, e, now)
	return 0, nil, false
}

// endProbe records the outcome of key's probe and wakes the key's waiters.
// An answer closes the key, unless it was paused again meanwhile; a
// throttle leaves it half-open (the throttle has paused it again); no
// outcome leaves it half-open for the next waiter to probe.
func (c *cooldown) endProbe(key string, out probeOutcome, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.keys[key]
	if !ok || e.probe == nil {
		return
	}
	close(e.probe)
	e.probe = nil
	if out == probeAnswered && !e.until.After(now) {
		e.halfOpen = false
	}
	c.keys[key] = e
}

// wait blocks until key is no longer paused, following any extension made
// while it waits, and, if the key is half-open, until its probe has closed
// it; or it returns as the key's probe (probe true), which the caller must
// then end with endProbe. It fails at once, without waiting, with a
// *WaitError wrapping ErrWaitTooLong when a pause would take the total wait
// beyond maxWait (> 0), or errDeadline when it would outlast ctx's
// deadline; a wait for a probe, whose end is unknown, fails the same way
// when it reaches maxWait or the deadline. If ctx ends first it returns a
// *WaitError wrapping ctx.Err(). It returns how long it waited.
func (c *cooldown) wait(ctx context.Context, key string, maxWait time.Duration) (waited time.Duration, probe bool, err error) {
	if c.n.Load() == 0 {
		return 0, false, nil
	}
	for {
		d, done, isProbe := c.next(key, time.Now())
		switch {
		case isProbe:
			return waited, true, nil
		case done != nil:
			left := time.Duration(-1) // no bound
			if maxWait > 0 {
				left = maxWait - waited
			}
			w, err := waitProbe(ctx, key, done, left)
			waited += w
			if err != nil {
				return waited, false, err
			}
		case d <= 0:
			return waited, false, nil
		default:
			if maxWait > 0 && d > maxWait-waited {
				return waited, false, &WaitError{Key: key, Delay: d, Err: ErrWaitTooLong}
			}
			if err := sleepCtx(ctx, key, d); err != nil {
				return waited, false, err
			}
			waited += d
		}
	}
}

// waitProbe waits until done is closed, for at most left (< 0: no bound)
// and not beyond ctx's deadline; it returns how long it waited. When left
// runs out it fails with a *WaitError wrapping ErrWaitTooLong, when the
// deadline comes with errDeadline, and when ctx ends otherwise with
// ctx.Err(); as the probe's end is unknown, the error's Delay is 0.
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
	var expire <-chan time.Time
	if bounded {
		t := time.NewTimer(bound)
		defer t.Stop()
		expire = t.C
	}
	start := time.Now()
	select {
	case <-done:
		return time.Since(start), nil
	case <-expire:
		return time.Since(start), &WaitError{Key: key, Err: why}
	case <-ctx.Done():
		err := ctx.Err()
		if err == context.DeadlineExceeded { // reached with the timer: the same error
			err = errDeadline
		}
		return time.Since(start), &WaitError{Key: key, Err: err}
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
