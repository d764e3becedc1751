package retry

import (
	"strconv"
	"time"
)

// Backoff defaults, used when the server gives no delay. They follow the
// AWS SDKs' standard retry mode (AWS SDKs and Tools Reference Guide, "Retry
// behavior"; the 2026 revision in aws/aws-sdk-go-v2#3400). The backoff is
// exponential, doubling up to MAX_BACKOFF = 20 s, applied before jitter.
// It has a longer 1 s base after a throttling error. For pace that is a
// 429 or 503 without a delay (DefaultThrottleBackoffInitial). AWS now
// starts transient errors at 50 ms. pace starts them at 100 ms, a little
// gentler on the server.
const (
	// DefaultBackoffInitial is the first backoff delay after a failed
	// attempt: a transport error, or a retryable status without a delay
	// other than 429 and 503 (those start at
	// DefaultThrottleBackoffInitial).
	DefaultBackoffInitial = 100 * time.Millisecond

	// DefaultBackoffMax caps every backoff delay, before and after jitter.
	DefaultBackoffMax = 20 * time.Second

	// DefaultThrottleBackoffInitial is the first backoff delay after a 429 or
	// a 503 without a delay. It is also the shortest wait jitter gives on that
	// schedule. So such a request waits at least a second between attempts,
	// unless the Transport's MaxRetryAfter is shorter. A 429 without a delay
	// pauses its whole key: see [Policy].NewBackOff.
	DefaultThrottleBackoffInitial = time.Second
)

// Jitter chooses how a backoff delay is randomized, so that clients that
// failed together do not retry together. The strategies are those of Marc
// Brooker, "Exponential Backoff And Jitter", AWS Architecture Blog, 2015.
//
// Whatever the strategy, pace keeps every wait above zero and at or below
// the backoff cap. Jitter is applied under the cap, never above it (unlike
// cenkalti/backoff's RandomizationFactor, cenkalti/backoff#117). It never
// shortens a wait below a floor. The floors are these:
//
//   - With the default schedule, half of DefaultBackoffInitial (50ms) after
//     a transport error or a retryable status other than 429 and 503. So no
//     retry fires at once.
//   - With the default schedule, DefaultThrottleBackoffInitial (1s) after a
//     429 or a 503 without a delay. A 503 without a delay is no throttle
//     (see pace.Throttled), yet gets this floor too.
//   - With a schedule from [Policy].NewBackOff, 1ns. The exception is a 429
//     without a delay. It pauses the key for the schedule's next wait, and
//     never less than DefaultThrottleBackoffInitial (1s).
//
// The request's first failure without a delay chooses the schedule, and so
// the floor, for its later retries. The cap is the Transport's
// MaxRetryAfter, and with the default schedule also DefaultBackoffMax
// (20s). A floor above the cap is lowered to it.
//
// The zero value is FullJitter. Values are plain integers, safe to copy. A
// value that is none of the constants below is refused by the Transport.
type Jitter int

const (
	// FullJitter waits a uniformly random time between the floor and the
	// backoff delay. It spreads retries the most; the blog found it does
	// the least total work. The default.
	FullJitter Jitter = iota

	// EqualJitter waits half the backoff delay plus a uniformly random part
	// of the other half, so a wait is never shorter than half the delay.
	EqualJitter

	// DecorrelatedJitter ignores the schedule after the first retry and
	// draws each wait uniformly between the floor and three times the
	// previous wait, capped.
	DecorrelatedJitter

	// NoJitter waits exactly the backoff delay (capped, floored). Useful in
	// tests and for a single client; fleets should jitter.
	NoJitter
)

// String returns the strategy's name, e.g. "full jitter", or "Jitter(n)"
// for a value that is not a strategy.
func (j Jitter) String() string {
	switch j {
	case FullJitter:
		return "full jitter"
	case EqualJitter:
		return "equal jitter"
	case DecorrelatedJitter:
		return "decorrelated jitter"
	case NoJitter:
		return "no jitter"
	}
	return "Jitter(" + strconv.Itoa(int(j)) + ")"
}
