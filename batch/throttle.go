package batch

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/pacehttp/pace"
)

// ErrThrottled marks an attempt the server throttled. It is
// [pace.ErrThrottled], so one test matches a throttle wherever it was met.
// An item function returns an error matching it (errors.Is) to make Run
// pause dispatch. Run then tries the item again instead of failing it.
// [*ThrottledError] matches it and can carry the server's delay.
//
// An error matching [pace.ErrRateLimited] does not fail the item either.
// It means a client-side limit refused the call (a pace.Transport's
// limiter, say), and nothing was sent. It pauses no key. The item is tried
// again after the wait a [*pace.WaitError] names (docs/batch.md,
// "Client-side refusals"). A wait that would outlast the run's deadline
// ends the item Interrupted.
var ErrThrottled = pace.ErrThrottled

// ThrottledError reports that the server throttled an attempt, and how long
// it asked the client to wait. It matches [ErrThrottled]. [HTTP] returns one
// for a throttle as [pace.Throttled] defines it (see [CheckResponse]).
type ThrottledError struct {
	// RetryAfter is the delay the server asked for, or 0 if it gave none; then
	// Run backs off on its own. The delay comes from Retry-After (RFC 9110
	// section 10.2.3) or another header [pace.RetryAfter] reads.
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

// Throttled reports whether [Run] takes err, met at now, as a throttle,
// and tries the item again later instead of failing it. ok is true when
// the server throttled the attempt, or when a client-side limit refused
// it and nothing was sent. d is the wait that err names, or 0. Other job
// runners use it to put a throttled job back in their queue (package
// github.com/pacehttp/pace/asynqpace does).
func Throttled(err error, now time.Time) (d time.Duration, ok bool) {
	d, kind := throttleOf(err, now)
	return d, kind != notThrottled
}

// throttleKind says how Run takes an attempt's error: see throttleOf.
type throttleKind int8

const (
	notThrottled   throttleKind = iota // a success or a failure
	serverThrottle                     // the server throttled: the key pauses
	clientRefusal                      // a client-side limit refused: nothing was sent
)

// throttleOf reports whether err, met at now, marks a throttle, which kind,
// and the delay asked for if one is known (0 otherwise).
//
// The server throttled (serverThrottle) in these cases:
//
//   - err matches ErrThrottled; a [*ThrottledError] carries its delay.
//   - err matches pace.ErrThrottled: the call waited behind its key's
//     probe, whose answer was another throttle.
//   - err is a *pace.AttemptsError whose Response
//     ([pace.Transport].ErrorOnGiveUp) [pace.Throttled] calls a throttle.
//     That is the one test CheckResponse applies.
//   - err is a *pace.AttemptsError whose last status was a 429 or a 403 (a
//     403 is retried only as a throttle). Its wait for the next attempt
//     was refused (by the call's deadline, say: retry.ReasonDeadline).
//
// A client-side limit refused the call (clientRefusal) when err matches
// pace.ErrRateLimited otherwise, outside an AttemptsError. That is
// pace.ErrQueueFull, pace.ErrWaitTooLong or pace.ErrWaitExceedsDeadline
// from a local limiter, or a wait at Run's own gate. Nothing was sent, and
// the [*pace.WaitError] carries the wait that would have been needed. That
// is no news of the server's: Run does not pause the key for it.
//
// A *pace.AttemptsError of any other kind is no throttle, although it may
// match pace.ErrRateLimited. An attempt was answered with a failure (a
// 503, say), and the Transport's wait for the next one was refused. Its
// backoff would outlast the call's deadline (retry.ReasonDeadline), or its
// limiter refused it. Pausing the whole host for it would stall the run. It
// is a failure, retryable by the rules of Options.MaxRequeues.
func throttleOf(err error, now time.Time) (time.Duration, throttleKind) {
	if errors.Is(err, ErrThrottled) {
		var te *ThrottledError
		if errors.As(err, &te) {
			return max(te.RetryAfter, 0), serverThrottle
		}
		return waitDelay(err), serverThrottle
	}
	var ae *pace.AttemptsError
	if errors.As(err, &ae) {
		if ae.Response != nil {
			if d, ok := pace.Throttled(ae.Response, now); ok {
				return max(d, 0), serverThrottle
			}
			return 0, notThrottled
		}
		if ae.StatusCode != http.StatusTooManyRequests && ae.StatusCode != http.StatusForbidden {
			return 0, notThrottled
		}
		if !errors.Is(err, pace.ErrRateLimited) {
			return 0, notThrottled
		}
		return waitDelay(err), serverThrottle
	}
	if errors.Is(err, pace.ErrRateLimited) {
		return waitDelay(err), clientRefusal
	}
	return 0, notThrottled
}

// waitDelay returns the wait a [*pace.WaitError] in err names, or 0.
func waitDelay(err error) time.Duration {
	var we *pace.WaitError
	if errors.As(err, &we) {
		return max(we.Delay, 0)
	}
	return 0
}

// StatusError reports a response whose status [CheckResponse] does not
// accept: anything but 2xx and a throttle ([pace.Throttled]). It fails the item;
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
	var ae *pace.AttemptsError
	if errors.As(err, &ae) && ae.Response != nil {
		return ae.Response.StatusCode
	}
	return 0
}
