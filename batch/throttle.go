package batch

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/pacehttp/pace"
)

// ErrThrottled marks an attempt the server throttled. An item function
// returns an error matching it (errors.Is) to make Run pause dispatch and
// try the item again instead of failing it; [*ThrottledError] matches it and
// can carry the server's delay.
//
// Run treats an error matching [pace.ErrRateLimited] the same way: a
// client-side limit (a pace.Transport's limiter, say) refused the call and
// nothing was sent, so the item is throttled, not failed, and the pause is
// the wait a [*pace.WaitError] names (or the backoff, without one). That
// includes pace.ErrWaitExceedsDeadline: if the pause would outlast the run's
// deadline, the run ends and the item is Interrupted.
var ErrThrottled = errors.New("batch: throttled")

// ThrottledError reports that the server throttled an attempt, and how long
// it asked the client to wait. It matches [ErrThrottled]. [HTTP] returns one
// for a 429 response, and for a 503 that names a delay (see
// [CheckResponse]).
type ThrottledError struct {
	// RetryAfter is the delay the server asked for (Retry-After, RFC 9110
	// section 10.2.3, or another header [pace.RetryAfter] reads), or 0 if
	// it gave none; then Run backs off on its own.
	RetryAfter time.Duration
	// Status is the HTTP status code, or 0 when the throttle was not an
	// HTTP response.
	Status int
	// Err is an underlying error, or nil.
	Err error
}

// Error returns "batch: throttled", followed by the status, the delay and
// Err when they are set, e.g. "batch: throttled: HTTP 429 Too Many
// Requests, retry after 2s".
func (e *ThrottledError) Error() string {
	msg := "batch: throttled"
	if e.Status != 0 {
		msg = fmt.Sprintf("batch: throttled: HTTP %d %s", e.Status, http.StatusText(e.Status))
	}
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(", retry after %v", e.RetryAfter)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is reports whether target is ErrThrottled.
func (e *ThrottledError) Is(target error) bool { return target == ErrThrottled }

// Unwrap returns e.Err.
func (e *ThrottledError) Unwrap() error { return e.Err }

// throttleDelay reports whether err marks a throttle, and the delay asked
// for if one is known. A throttle is an error matching ErrThrottled (the
// server said so; a [*ThrottledError] carries its delay) or one matching
// pace.ErrRateLimited (a client-side limit refused the call before anything
// was sent: pace.ErrQueueFull, pace.ErrWaitTooLong or
// pace.ErrWaitExceedsDeadline; a [*pace.WaitError] carries the wait that
// would have been needed).
//
// A *pace.AttemptsError whose Transport gave up because the backoff after
// a failure other than a 429 would outlast the call's deadline
// (pace.ReasonDeadline) is no throttle, although it matches
// pace.ErrWaitExceedsDeadline: the host did not ask for a pause, its
// answer failed (a 503, say), and pausing the whole host for it would stall
// the run; it is a retryable failure (see Options.MaxRequeues).
func throttleDelay(err error) (delay time.Duration, throttled bool) {
	var ae *pace.AttemptsError
	if errors.As(err, &ae) && ae.Reason == pace.ReasonDeadline && ae.StatusCode != http.StatusTooManyRequests {
		return 0, false
	}
	switch {
	case errors.Is(err, ErrThrottled):
		var te *ThrottledError
		if errors.As(err, &te) {
			return max(te.RetryAfter, 0), true
		}
		return 0, true
	case errors.Is(err, pace.ErrRateLimited):
		var we *pace.WaitError
		if errors.As(err, &we) {
			return max(we.Delay, 0), true
		}
		return 0, true
	}
	return 0, false
}

// StatusError reports a response whose status [CheckResponse] does not
// accept: anything but 2xx, 429, and 503 with a delay. It fails the item;
// [Result].Status records Code.
type StatusError struct {
	Code int // the HTTP status code
}

// Error returns "batch: HTTP <Code> <status text>", e.g. "batch: HTTP 404
// Not Found".
func (e *StatusError) Error() string {
	return fmt.Sprintf("batch: HTTP %d %s", e.Code, http.StatusText(e.Code))
}

// statusOf returns the HTTP status carried by err, or 0.
func statusOf(err error) int {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Code
	}
	var te *ThrottledError
	if errors.As(err, &te) {
		return te.Status
	}
	return 0
}
