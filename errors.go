package pace

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/pacehttp/pace/internal/retrydecide"
	"github.com/pacehttp/pace/retry"
)

var (
	// ErrInvalidConfig is matched by every [*ConfigError]: a setting that can
	// never work. The constructors of limits and limiters return it when the
	// value is built. A [Transport] returns it from Validate and from every
	// RoundTrip, before anything is sent. Packages batch and middleware return
	// a *ConfigError too, for their invalid Options and arguments. (For batch
	// that includes a nil item function or build, and two items with the same
	// ID.) So this one test covers them as well. A setting that was accepted
	// never fails later.
	ErrInvalidConfig = errors.New("pace: invalid configuration")

	// ErrRateLimited means a request was refused by a client-side limit and
	// nothing was sent or booked. ErrQueueFull, ErrWaitTooLong and
	// ErrWaitExceedsDeadline wrap it, so errors.Is(err, ErrRateLimited)
	// matches all of them. It is carried by a [*WaitError].
	ErrRateLimited = errors.New("pace: rate limited")

	// ErrQueueFull means a leaky-bucket pacer already holds as many waiters
	// (or as long a wait) as [LeakyOptions] allows, alone or as a part of
	// [All]. It wraps ErrRateLimited.
	ErrQueueFull = fmt.Errorf("%w: queue full", ErrRateLimited)

	// ErrWaitTooLong means the wait for a limit or a key's pause would exceed
	// the longest acceptable wait, or could not be represented as a
	// time.Duration. The longest wait is the maxWait argument of
	// throttle.Limiter's Wait and [Keyed.ReserveAt], or [Transport].MaxWait.
	// It wraps ErrRateLimited.
	ErrWaitTooLong = fmt.Errorf("%w: wait too long", ErrRateLimited)

	// ErrWaitExceedsDeadline means the wait for a limit would outlast the
	// context's deadline, so the call failed at once: nothing was booked and
	// nothing was sent. It wraps ErrRateLimited; the [*WaitError] that
	// carries it also matches context.DeadlineExceeded.
	ErrWaitExceedsDeadline = fmt.Errorf("%w: wait exceeds context deadline", ErrRateLimited)

	// ErrThrottled means the server throttled the request's key (see
	// [Throttled]) and the request was not sent. It waited behind the key's
	// probe, whose answer was another throttle. That answer counts as this
	// request's attempt (see [Transport]). It wraps ErrRateLimited.
	ErrThrottled = fmt.Errorf("%w: key throttled", ErrRateLimited)

	// ErrBurstExceeded means one call asked for more units than the limiter
	// can ever grant at once. That is n above a token bucket's burst, a
	// window's r.N, a pacer's Slack+1, or the smallest of these among the
	// parts of [All]. It can never succeed, and it does not match
	// ErrRateLimited.
	ErrBurstExceeded = errors.New("pace: request exceeds burst")

	// ErrBadCount means a call asked for n <= 0 units. It does not match
	// ErrRateLimited.
	ErrBadCount = errors.New("pace: unit count must be positive")
)

// ConfigError reports one invalid setting. It matches [ErrInvalidConfig].
// Packages batch and middleware return it too, with Field naming their
// option (for example "Concurrency" or "KeyHeader").
type ConfigError struct {
	Field string // the setting, e.g. "Rate.N", "Burst" or "MaxWait"
	// Value is the rejected value, of the setting's own type: a
	// time.Duration for a duration such as MaxWait or MaxRetryAfter, a
	// string for a header name or a host.
	Value  any
	Reason string // what is wrong, e.g. "must be positive"
}

// Error returns "pace: invalid Field Value: Reason", without Value when it
// prints as nothing (an empty string or nil). A string Value is quoted as
// by %q. So is any other whose text holds a character that is not
// printable. So a value such as a header name "X-Key\nEvil: 1" stays on
// one line. A time.Duration prints as one ("-1.5s").
func (e *ConfigError) Error() string {
	var v string
	switch x := e.Value.(type) {
	case nil:
	case string:
		if x != "" {
			v = strconv.Quote(x)
		}
	default:
		v = fmt.Sprint(x)
		if strings.ContainsFunc(v, func(r rune) bool { return !strconv.IsPrint(r) }) {
			v = strconv.Quote(v)
		}
	}
	if v != "" {
		return fmt.Sprintf("pace: invalid %s %s: %s", e.Field, v, e.Reason)
	}
	return fmt.Sprintf("pace: invalid %s: %s", e.Field, e.Reason)
}

// Is reports whether target is ErrInvalidConfig.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

// errNilRequest, errNilURL, errNilHeader and errNoHost are RoundTrip's
// errors for a request that net/http's Transport refuses too, before
// dialling. That is a nil request, a nil URL, a nil Header, or an http or
// https URL without a host. Nothing was sent, so they are no
// [*AttemptsError].
var (
	errNilRequest = errors.New("pace: nil Request: nothing sent")
	errNilURL     = errors.New("pace: nil Request.URL: nothing sent")
	errNilHeader  = errors.New("pace: nil Request.Header: nothing sent")
	errNoHost     = errors.New("pace: no Host in request URL: nothing sent")
)

func configErr(field string, value any, reason string) error {
	return &ConfigError{Field: field, Value: value, Reason: reason}
}

// WaitError reports that a limiter, or a key's pause, did not let a request
// proceed, so nothing was sent. Err is one of [ErrQueueFull],
// [ErrWaitTooLong], [ErrWaitExceedsDeadline] (joined with
// context.DeadlineExceeded), [ErrBurstExceeded] or [ErrBadCount], or the
// context's error when the context ended before or during the wait. Test it
// with errors.Is and errors.As. [Keyed.Wait],
// [Shaper.Wait] and [Transport.RoundTrip] return it.
type WaitError struct {
	// Key is the limiter key, empty for a [Shaper]. By default it is the
	// request's host. Else it is the key the caller chose ([Transport].Key, a
	// [Keyed]'s key), which may be a secret such as an API key. Take care
	// where it is written. Error shows such a key only as a fingerprint.
	Key   string
	Delay time.Duration // the wait that would have been needed; 0 if unknown
	Err   error         // why the request may not proceed; see the type's description

	hostKey bool // Key is a request's host, set by the Transport: Error shows it
}

// Error returns "pace: "api.example": wait Delay: Err" for a request a
// [Transport] keyed by its host. For any other key it returns "pace:
// key~1a2b3c4d5e6f: wait Delay: Err". A key the caller chose may be a
// credential. So its text is "key~" and the first 12 hexadecimal digits
// of the key's SHA-256. The caller can compute it to match it with its own
// records. A host longer than 259 bytes (a DNS name and a port) is shown
// that way too, so that the text stays short. Error leaves out the key
// when it is empty (a [Shaper]), and the wait when Delay is 0. It leaves
// out the "pace: " that starts the text of the package's own errors.
func (e *WaitError) Error() string {
	var b strings.Builder
	b.WriteString("pace: ")
	if e.Key != "" {
		k, shown := keyText(e.Key, e.hostKey)
		if shown {
			k = strconv.Quote(k)
		}
		b.WriteString(k)
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

// AttemptsError reports that a [Transport] sent a request at least once
// and returns no response. Err is the last attempt's transport error, or
// why retrying stopped after a response was discarded for a retry. It is
// then a [*WaitError] for the wait before the next attempt. That wait
// would outlast the context's deadline, was cut short by the context, or
// was refused by the key's limiter. Or Err is the error of the request's
// GetBody.
//
// Reason says why the Transport gave up on a failure it could otherwise
// have retried, as the [EventGiveUp] it emits does. Examples are
// [retry.ReasonAttempts], [retry.ReasonBudget], [retry.ReasonNotIdempotent]
// and [retry.ReasonDeadline]. It is empty when Err alone explains the end:
// an error that is never retried, a wait before an attempt refused, or the
// context ending during a wait. errors.Is and errors.As see through it to
// Err. With [retry.Policy].Decide's Fail, Err is Fail and Reason is
// [retry.ReasonDecided].
//
// With [Transport].ErrorOnGiveUp, a response that could have been retried
// but was not comes back in Response, and Err is nil. The exceptions: the
// wait would have outlasted the deadline (Err says so then), or Decide's
// Fail ended the call on that response (Err is Fail then).
type AttemptsError struct {
	Attempts   int          // the attempts made, the first included: those sent, and the throttled answers of the key's probe that counted as this request's (see Transport)
	StatusCode int          // status of the last response received and discarded; for a request whose last attempt was its key's probe's throttled answer, the status of the key's last throttle the Transport saw (429 if none: the probe may have been another process's); 0 if the last attempt got none
	Reason     retry.Reason // why a retryable failure was not retried; empty when Err explains the end
	Err        error        // the last transport error, or why retrying stopped; nil only with Response set

	// Response is the last response, only with Transport.ErrorOnGiveUp (a
	// give-up, or Decide's Fail on a response), else nil. Its status and
	// headers are as received, and its Request is the caller's. Its Body holds
	// a copy of at most the first 4 KiB of the body (ContentLength is the
	// copy's length). The original body is closed. So the error holds no
	// connection and there is nothing to close.
	Response *http.Response
}

// Error returns, for example, "pace: 1 attempt (gave up: method not safe
// to replay): EOF" or "pace: 3 attempts, last status 503: context
// canceled". It leaves out the ": Err" part when Err is nil: "pace: 3
// attempts, last status 503 (gave up: MaxAttempts reached)".
func (e *AttemptsError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "pace: %d attempt", e.Attempts)
	if e.Attempts != 1 {
		b.WriteByte('s')
	}
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ", last status %d", e.StatusCode)
	}
	if e.Reason != "" {
		fmt.Fprintf(&b, " (gave up: %s)", reasonText(e.Reason))
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(strings.TrimPrefix(e.Err.Error(), "pace: "))
	}
	return b.String()
}

// reasonText describes a give-up reason in words for error messages.
func reasonText(r retry.Reason) string {
	switch r {
	case retry.ReasonAttempts:
		return "MaxAttempts reached"
	case retry.ReasonBudget:
		return "retry budget spent"
	case retry.ReasonDeadline:
		return "the wait would outlast the context's deadline"
	case retry.ReasonNotReplayable:
		return "body cannot be sent again"
	case retry.ReasonNotIdempotent:
		return "method not safe to replay"
	case retry.ReasonServerHint:
		return "server said not to retry"
	case retry.ReasonBackoffStop:
		return "backoff schedule stopped"
	case retry.ReasonDecided:
		return "retry.Policy.Decide ended the call"
	case retry.ReasonDelayTooLong:
		return "server delay above MaxRetryAfter"
	}
	return string(r)
}

// Unwrap returns e.Err.
func (e *AttemptsError) Unwrap() error { return e.Err }

// errDeadline is the Err of a WaitError refused because of the context's
// deadline: it matches both ErrWaitExceedsDeadline and DeadlineExceeded.
var errDeadline = fmt.Errorf("%w: %w", ErrWaitExceedsDeadline, context.DeadlineExceeded)

// policyErr reports the first invalid setting of p (retrydecide.Validate)
// as a *ConfigError whose Field is relative to the Policy ("Statuses",
// "Budget.TTL"; the Transport prefixes "Retry."), or nil.
func policyErr(p *retry.Policy) error {
	if fe := retrydecide.Validate(p); fe != nil {
		return configErr(fe.Field, fe.Value, fe.Reason)
	}
	return nil
}

// headerNameErr returns a *ConfigError naming field when name is not a
// header field name (retrydecide.HeaderNameProblem), or nil.
func headerNameErr(field, name string) error {
	if why := retrydecide.HeaderNameProblem(name); why != "" {
		return configErr(field, name, why)
	}
	return nil
}

// maxWaitErr is the error of a negative maxWait, refused by every Wait and
// ReserveAt that takes one.
func maxWaitErr(maxWait time.Duration) error {
	return configErr("maxWait", maxWait, "must not be negative (0 sets no bound)")
}

// nilContextErr is the error of a Wait given a nil Context.
func nilContextErr() error {
	return configErr("ctx", nil, "must not be nil (use context.Background())")
}
