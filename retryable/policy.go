package retryable

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/pacehttp/pace"
)

// Policy is pace's reading of the server's answer for a
// [retryablehttp.Client]: its CheckRetry and Backoff methods fit the
// client's fields of those names ([retryablehttp.CheckRetry],
// [retryablehttp.Backoff]), and [Policy.Install] sets them together with a
// pacing [pace.Transport]. The zero Policy is ready to use. A Policy is safe
// for concurrent use; do not change its fields once it is in use.
type Policy struct {
	// MaxRetryAfter caps every wait Backoff returns, and a server delay
	// above it is not waited for at all: CheckRetry stops the retries, so
	// the client returns that response at once (a retry before the
	// server's instant is certain to fail, hashicorp/go-retryablehttp#247).
	// Zero means [pace.DefaultMaxRetryAfter] (five minutes); negative is
	// invalid. Give the Transport the same MaxRetryAfter.
	MaxRetryAfter time.Duration

	// Check is the retry decision CheckRetry refines. Nil means
	// [retryablehttp.DefaultRetryPolicy] (connection errors, 429 and 5xx
	// except 501, any method), so that a client keeps its behaviour.
	Check retryablehttp.CheckRetry

	// Fallback is the wait when the server names none. Nil means
	// [retryablehttp.DefaultBackoff]'s exponential schedule, RetryWaitMin
	// doubling up to RetryWaitMax, without its own Retry-After parsing
	// (which reads one of the three date forms and no -ms header, and is
	// not capped).
	Fallback retryablehttp.Backoff
}

// maxRetryAfter returns MaxRetryAfter or its default.
func (p *Policy) maxRetryAfter() time.Duration {
	if p.MaxRetryAfter <= 0 {
		return pace.DefaultMaxRetryAfter
	}
	return p.MaxRetryAfter
}

// CheckRetry is a [retryablehttp.CheckRetry]. In order:
//
//   - The context ended: no retry, and the context's error.
//   - An error that no retry can mend ([pace.ErrInvalidConfig],
//     [pace.ErrBurstExceeded], [pace.ErrWaitExceedsDeadline]: the pacing
//     Transport refused the attempt, nothing was sent): no retry, and
//     that error.
//   - An error response (4xx, 5xx) whose server delay, as
//     [pace.RetryAfter] reads it (Retry-After in seconds or any of the
//     three HTTP-date forms of RFC 9110 §5.6.7, retry-after-ms,
//     x-ms-retry-after-ms, the reset headers), exceeds MaxRetryAfter: no
//     retry and no error, so the client returns that response at once, as
//     [pace.Transport] does.
//   - Otherwise Check (or retryablehttp.DefaultRetryPolicy) decides.
//
// It does not read the body and is safe for concurrent use.
func (p *Policy) CheckRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if err != nil && (errors.Is(err, pace.ErrInvalidConfig) || errors.Is(err, pace.ErrBurstExceeded) ||
		errors.Is(err, pace.ErrWaitExceedsDeadline)) {
		return false, err
	}
	if resp != nil && resp.StatusCode >= 400 {
		if d, ok := pace.RetryAfter(resp, time.Now()); ok && d > p.maxRetryAfter() {
			return false, nil
		}
	}
	if p.Check != nil {
		return p.Check(ctx, resp, err)
	}
	return retryablehttp.DefaultRetryPolicy(ctx, resp, err)
}

// Backoff is a [retryablehttp.Backoff]: the wait before retry attemptNum
// (from 0) after resp. When resp is an error response (4xx, 5xx) that
// names a delay, as [pace.RetryAfter] reads it, the wait is that delay: a
// date is waited for until its instant, never less, whichever of the three
// HTTP-date forms it uses, and a millisecond header is honoured to the
// millisecond. Otherwise the wait is Fallback's (by default
// retryablehttp.DefaultBackoff's exponential schedule from lo, RetryWaitMin,
// up to hi, RetryWaitMax). Every wait is capped at MaxRetryAfter and never
// negative, so no server answer can make the client sleep without bound.
// It does not read the body and is safe for concurrent use.
func (p *Policy) Backoff(lo, hi time.Duration, attemptNum int, resp *http.Response) time.Duration {
	limit := p.maxRetryAfter()
	if resp != nil && resp.StatusCode >= 400 {
		if d, ok := pace.RetryAfter(resp, time.Now()); ok {
			return min(d, limit)
		}
	}
	var d time.Duration
	if p.Fallback != nil {
		d = p.Fallback(lo, hi, attemptNum, resp)
	} else {
		d = retryablehttp.DefaultBackoff(lo, hi, attemptNum, nil) // nil: its own Retry-After parsing is not used
	}
	return max(min(d, limit), 0)
}

// oneAttemptPerHost returns a [*pace.ConfigError] naming the first entry of
// h, in key order, whose MaxAttempts would make the Transport retry (above
// 1): its retries would multiply the client's.
func oneAttemptPerHost(h pace.Hosts) error {
	for _, host := range slices.Sorted(maps.Keys(h)) {
		if n := h[host].MaxAttempts; n > 1 {
			return &pace.ConfigError{Field: "Limits[" + strconv.Quote(host) + "].MaxAttempts", Value: n,
				Reason: "must be 0 or 1: the retryablehttp.Client makes the retries"}
		}
	}
	return nil
}

// Install makes c wait and retry by p and send every attempt through t: it
// sets c.CheckRetry and c.Backoff to p's methods, and c.HTTPClient to a
// copy of it (Timeout, Jar and CheckRedirect kept) whose Transport is t.
// t paces each attempt by its Limits or Limiter, makes each wait out its
// host's cooldown, and pauses the host on a 429 (or a 503 with a delay) for
// every goroutine and every client that shares t. t must make one attempt
// per call (Retry.MaxAttempts 1, and no [pace.Host] of its Limits with a
// MaxAttempts above 1: c makes the retries) and return responses, not
// errors (ErrorOnGiveUp false: c's CheckRetry and Backoff read them); t.Base
// nil means pace's default Base, as always (set Base to
// c.HTTPClient.Transport to keep the client's own). Install returns, and
// changes nothing then, a [*pace.ConfigError] (matching
// [pace.ErrInvalidConfig]) for a nil argument, a t that breaks those rules,
// an invalid t (see [pace.Transport.Validate]), or a negative
// p.MaxRetryAfter. Call it before c's first use; it is not safe for
// concurrent use with c.
func (p *Policy) Install(c *retryablehttp.Client, t *pace.Transport) error {
	switch {
	case c == nil:
		return &pace.ConfigError{Field: "Client", Reason: "nil"}
	case t == nil:
		return &pace.ConfigError{Field: "Transport", Reason: "nil"}
	case p.MaxRetryAfter < 0:
		return &pace.ConfigError{Field: "MaxRetryAfter", Value: p.MaxRetryAfter, Reason: "must not be negative"}
	case t.Retry.MaxAttempts != 1:
		return &pace.ConfigError{Field: "Retry.MaxAttempts", Value: t.Retry.MaxAttempts, Reason: "must be 1: the retryablehttp.Client makes the retries"}
	case t.ErrorOnGiveUp:
		return &pace.ConfigError{Field: "ErrorOnGiveUp", Value: true, Reason: "must be false: CheckRetry and Backoff read the response"}
	}
	if err := oneAttemptPerHost(t.Limits); err != nil {
		return err
	}
	if err := t.Validate(); err != nil {
		return err
	}
	var hc http.Client
	if c.HTTPClient != nil {
		hc = *c.HTTPClient
	}
	hc.Transport = t
	c.HTTPClient = &hc
	c.CheckRetry, c.Backoff = p.CheckRetry, p.Backoff
	return nil
}
