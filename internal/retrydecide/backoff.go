package retrydecide

import (
	"math/rand/v2"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/pacehttp/pace/retry"
)

// NewBackOff returns the backoff schedule for one request: initial,
// doubling up to maxDelay, then maxDelay forever (MaxElapsedTime 0: the
// attempt count and the context bound retries, not the schedule).
// Randomization is off because Jitter owns it, which keeps the cap a cap
// (cenkalti/backoff#117, #139). initial <= 0 means retry.DefaultBackoffInitial,
// maxDelay <= 0 retry.DefaultBackoffMax, and an initial above maxDelay starts at
// maxDelay. The policy is stateful and not safe for concurrent use: each
// request needs its own.
func NewBackOff(initial, maxDelay time.Duration) backoff.BackOff {
	initial, maxDelay = backoffBounds(initial, maxDelay)
	return backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(initial),
		backoff.WithMultiplier(2),
		backoff.WithMaxInterval(maxDelay),
		backoff.WithRandomizationFactor(0),
		backoff.WithMaxElapsedTime(0),
	)
}

// backoffBounds applies newBackOff's defaults to initial and maxDelay.
func backoffBounds(initial, maxDelay time.Duration) (time.Duration, time.Duration) {
	if initial <= 0 {
		initial = retry.DefaultBackoffInitial
	}
	if maxDelay <= 0 {
		maxDelay = retry.DefaultBackoffMax
	}
	return min(initial, maxDelay), maxDelay
}

// BackoffDelay returns the n-th delay (n >= 1; smaller n means 1) of the
// schedule NewBackOff(initial, maxDelay) returns, without running it. That
// is initial doubled n-1 times, capped at maxDelay. The cap takes over once
// a delay reaches half of it, as ExponentialBackOff does. It never
// computes 2^n. It doubles at most 63 times, since a delay of at least 1
// ns reaches any cap by then. So the cost is bounded for every n and
// nothing overflows (carlescere/goback#5). It lets a caller derive a delay
// from a count (such as a key's consecutive throttles) without keeping a
// policy. Pure and safe for concurrent use.
func BackoffDelay(n int, initial, maxDelay time.Duration) time.Duration {
	initial, maxDelay = backoffBounds(initial, maxDelay)
	d := initial
	for i := 1; i < n; i++ {
		if d >= maxDelay-d { // 2d >= maxDelay, without overflow: capped from now on
			return maxDelay
		}
		d *= 2
	}
	return d
}

// BackoffFloor returns the shortest wait jitter may produce, for a schedule
// that starts at initial. After a transport error or a 5xx it is half of
// initial. So full jitter still spreads the first retry over [initial/2,
// initial], yet never fires a retry at once. A near-zero wait is a hot
// loop (weaviate/weaviate#10179). After a 429 or 503 it is initial itself.
// The server said slow down, so a wait never drops below the throttle
// base. aws/aws-sdk-net#4341 shows full jitter collapsing throttle waits to
// a few milliseconds. The result is at least 1 ns.
func BackoffFloor(initial time.Duration, throttled bool) time.Duration {
	if !throttled {
		initial /= 2
	}
	return max(initial, 1)
}

// Wait returns the wait before the next retry when the server gave no
// delay: the next delay of the request's policy b, jittered by j. prev is
// the previous wait this function returned for the request (0 before the
// first retry); floor and cap bound the result as applyJitter explains. ok is
// false, and b must not be asked again, when b returns backoff.Stop: the
// policy says stop retrying (a nil b says the same). Any other value b
// returns, zero, negative or huge, is brought into [floor, cap], so a
// user-supplied policy can never cause a zero, negative or unbounded wait.
// rnd(n) must return a uniform integer in [0, n); nil means math/rand/v2's
// Int64N, which is safe for concurrent use. b is not safe for concurrent
// use; the rest is pure.
func Wait(b backoff.BackOff, j retry.Jitter, prev, floor, cap time.Duration, rnd func(n int64) int64) (wait time.Duration, ok bool) {
	if b == nil {
		return 0, false
	}
	d := b.NextBackOff()
	if d == backoff.Stop {
		return 0, false
	}
	return ApplyJitter(j, d, prev, floor, cap, rnd), true
}

// ApplyJitter jitters the backoff delay d by j. The result is always in [lo, cap] with
// lo = min(max(floor, 1ns), cap), so it is above zero and never above cap:
//
//   - d is first brought into [lo, cap]: a d <= 0 from a misbehaving policy
//     counts as lo, a d above cap as cap. Call this hi.
//   - retry.FullJitter: uniform in [lo, hi].
//   - retry.EqualJitter: uniform in [max(⌈hi/2⌉, lo), hi].
//   - retry.DecorrelatedJitter: uniform in [lo, min(cap, 3·prev)], prev being the
//     previous wait (hi when prev <= 0, i.e. on the first retry), as
//     sleep = min(cap, random_between(base, sleep·3)) in the blog, with lo
//     for base. 3·prev is computed without overflow.
//   - retry.NoJitter: hi.
//
// cap <= 0 means retry.DefaultBackoffMax; an unknown j behaves as retry.FullJitter.
// rnd is as in retryWait; a value it returns outside [0, n) is clamped.
func ApplyJitter(j retry.Jitter, d, prev, floor, cap time.Duration, rnd func(n int64) int64) time.Duration {
	if cap <= 0 {
		cap = retry.DefaultBackoffMax
	}
	lo := min(max(floor, 1), cap)
	hi := min(max(d, lo), cap)
	switch j {
	case retry.NoJitter:
		return hi
	case retry.EqualJitter:
		return uniformWait(max(hi-hi/2, lo), hi, rnd)
	case retry.DecorrelatedJitter:
		if prev <= 0 {
			prev = hi
		}
		top := cap
		if prev <= cap/3 {
			top = prev * 3
		}
		return uniformWait(lo, max(top, lo), rnd)
	default:
		return uniformWait(lo, hi, rnd)
	}
}

// uniformWait returns a uniform duration in [lo, hi], 1 <= lo <= hi.
func uniformWait(lo, hi time.Duration, rnd func(n int64) int64) time.Duration {
	if hi <= lo {
		return lo
	}
	if rnd == nil {
		rnd = rand.Int64N
	}
	n := int64(hi-lo) + 1 // no overflow: lo >= 1
	r := rnd(n)
	r = min(max(r, 0), n-1)
	return lo + time.Duration(r)
}
