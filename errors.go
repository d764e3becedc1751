package pace

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

var (
	// ErrInvalidConfig is matched by every [*ConfigError]: a limit, limiter
	// or Transport setting that can never work. Such errors are returned
	// when the value is built, never later at request time.
	ErrInvalidConfig = errors.New("pace: invalid configuration")

	// ErrRateLimited means a request was refused by a client-side limit and
	// nothing was sent or booked. The more specific errors below wrap it, so
	// errors.Is(err, ErrRateLimited) matches all of them.
	ErrRateLimited = errors.New("pace: rate limited")

	// ErrQueueFull means a leaky-bucket pacer already holds as many waiters
	// (or as long a wait) as it was configured for. It wraps ErrRateLimited.
	ErrQueueFull = fmt.Errorf("%w: queue full", ErrRateLimited)

	// ErrWaitTooLong means the wait for a limit would exceed the longest
	// acceptable wait, or could not be represented as a time.Duration. It
	// wraps ErrRateLimited.
	ErrWaitTooLong = fmt.Errorf("%w: wait too long", ErrRateLimited)

	// ErrWaitExceedsDeadline means the wait for a limit would outlast the
	// context's deadline, so nothing was booked and nothing was sent. It
	// wraps ErrRateLimited; the [*WaitError] that carries it also matches
	// context.DeadlineExceeded.
	ErrWaitExceedsDeadline = fmt.Errorf("%w: wait exceeds context deadline", ErrRateLimited)

	// ErrBurstExceeded means one call asked for more units than the limiter
	// can ever grant at once (n above the burst, the window's limit, or the
	// pacer's queue). It can never succeed.
	ErrBurstExceeded = errors.New("pace: request exceeds burst")

	// ErrBadCount means a call asked for n <= 0 units.
	ErrBadCount = errors.New("pace: unit count must be positive")
)

// ConfigError reports one invalid setting. It matches [ErrInvalidConfig].
type ConfigError struct {
	Field  string // the setting, e.g. "Rate.N" or "Burst"
	Value  any    // the rejected value
	Reason string // what is wrong, e.g. "must be positive"
}

// Error returns "pace: invalid Field Value: Reason", without Value when it
// prints as nothing (an empty string or nil).
func (e *ConfigError) Error() string {
	if v := fmt.Sprint(e.Value); v != "" && e.Value != nil {
		return fmt.Sprintf("pace: invalid %s %s: %s", e.Field, v, e.Reason)
	}
	return fmt.Sprintf("pace: invalid %s: %s", e.Field, e.Reason)
}

// Is reports whether target is ErrInvalidConfig.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

func configErr(field string, value any, reason string) error {
	return &ConfigError{Field: field, Value: value, Reason: reason}
}

// WaitError reports that a limiter did not let a request proceed. Err is one
// of [ErrQueueFull], [ErrWaitTooLong], [ErrWaitExceedsDeadline] (joined with
// context.DeadlineExceeded), [ErrBurstExceeded], [ErrBadCount], or the
// context's error when it ended during the wait. Use errors.Is and errors.As.
type WaitError struct {
	Key   string        // the limiter key (by default the request's host)
	Delay time.Duration // the wait that would have been needed; 0 if unknown
	Err   error
}

// Error returns "pace: "key": wait Delay: Err", leaving out the key when it
// is empty (a single-key limiter), the wait when Delay is 0, and the "pace: "
// that starts the text of the package's own errors.
func (e *WaitError) Error() string {
	var b strings.Builder
	b.WriteString("pace: ")
	if e.Key != "" {
		b.WriteString(strconv.Quote(e.Key))
		b.WriteString(": ")
	}
	if e.Delay > 0 {
		b.WriteString("wait ")
		b.WriteString(e.Delay.String())
		b.WriteString(": ")
	}
	b.WriteString(strings.TrimPrefix(fmt.Sprint(e.Err), "pace: "))
	return b.String()
}

// Unwrap returns e.Err.
func (e *WaitError) Unwrap() error { return e.Err }

// errDeadline is the Err of a WaitError refused because of the context's
// deadline: it matches both ErrWaitExceedsDeadline and DeadlineExceeded.
var errDeadline = fmt.Errorf("%w: %w", ErrWaitExceedsDeadline, context.DeadlineExceeded)
