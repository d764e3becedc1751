package retryable

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/pacehttp/pace"
)

// Policy is pace's reading of the server's answer for a
// [retryablehttp.Client]. Its CheckRetry and Backoff methods fit the
// client's fields of those names ([retryablehttp.CheckRetry],
// [retryablehttp.Backoff]). [Policy.Install] sets them together with a
// pacing [pace.Transport]. The zero Policy is ready to use. A Policy is
// safe for concurrent use; do not change its fields once it is in use.
type Policy struct {
	// MaxRetryAfter caps every wait Backoff returns. A server delay above it is
	// not waited for at all. CheckRetry stops the retries, so the client
	// returns that response at once. A retry before the server's instant is
	// certain to fail (hashicorp/go-retryablehttp#247). Zero means
	// [pace.DefaultMaxRetryAfter] (five minutes); negative is invalid. Give the
	// Transport the same MaxRetryAfter.
	MaxRetryAfter time.Duration

	// Check is the retry decision CheckRetry refines. Nil means
	// [retryablehttp.DefaultRetryPolicy] (connection errors, 429 and 5xx
	// except 501, any method), so that a client keeps its behaviour.
	Check retryablehttp.CheckRetry

	// Fallback is the wait when the server names none. Nil means
	// [retryablehttp.DefaultBackoff]'s exponential schedule, RetryWaitMin
	// doubling up to RetryWaitMax. Its own Retry-After parsing is left out: it
	// reads one of the three date forms and no -ms header, and is not capped.
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
//   - The client's PrepareRetry failed (see [Policy.Install]): no retry,
//     and its error.
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
	if pe := (*prepareError)(nil); errors.As(err, &pe) {
		return false, pe.err
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
// (from 0) after resp. resp may be an error response (4xx, 5xx) that names
// a delay, as [pace.RetryAfter] reads it. The wait is then that delay. A
// date is waited for until its instant, never less, whichever of the three
// HTTP-date forms it uses. A millisecond header is honoured to the
// millisecond. Otherwise the wait is Fallback's. By default that is
// retryablehttp.DefaultBackoff's exponential schedule from lo
// (RetryWaitMin) up to hi (RetryWaitMax). Every wait is capped at
// MaxRetryAfter and never negative. So no server answer can make the
// client sleep without bound. It does not read the body and is safe for
// concurrent use.
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

// Install makes c wait and retry by p, and send every attempt through t.
// It sets c.CheckRetry and c.Backoff to p's methods. It sets c.HTTPClient
// to a copy of it (Timeout, Jar and CheckRedirect kept) whose Transport is
// t. (With a PrepareRetry on c, that Transport wraps t: see below.)
//
// t paces each attempt by its Limits or Limiter, and makes each wait out
// its host's cooldown. It pauses the host on a 429 (or a 503 with a delay)
// for every goroutine and every client that shares t. t must make one
// attempt per call, as c makes the retries. So Retry.MaxAttempts must be
// 1, and no [pace.Host] of its Limits may have a MaxAttempts above 1. t
// must return responses, not errors: ErrorOnGiveUp false, as c's
// CheckRetry and Backoff read them. t.Base nil means pace's default Base,
// as always. Set Base to c.HTTPClient.Transport to keep the client's own.
//
// If c has a PrepareRetry, t calls it instead of c, after t's waits. So a
// signature or a token it sets is fresh when the attempt leaves. It is then
// called before every attempt, the first included. It gets t's copy of the
// request: its changes do not carry over to the next attempt. If it fails,
// that attempt is not sent, and c returns its error without a retry. For
// this, Install sets t.PrepareAttempt, and c.PrepareRetry to nil.
// t.PrepareAttempt must be nil, or set by an earlier Install. t reads
// PrepareAttempt once, at its first use, so call Install before that.
//
// Install returns a [*pace.ConfigError] (matching [pace.ErrInvalidConfig]),
// and changes nothing, in these cases: a nil argument, a t that breaks
// those rules, an invalid t (see [pace.Transport.Validate]), or a negative
// p.MaxRetryAfter. Call it before c's first use. It is not safe for
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
	prepare := c.PrepareRetry
	if pr, ok := httpTransport(c).(*preparing); ok && prepare == nil {
		prepare = pr.prepare // Install ran before: keep the client's PrepareRetry
	}
	if prepare != nil && t.PrepareAttempt != nil && !isPrepareAttempt(t.PrepareAttempt) {
		return &pace.ConfigError{Field: "PrepareAttempt", Reason: "set, and the client has a PrepareRetry, which Install calls there: use one"}
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
	if prepare != nil {
		if t.PrepareAttempt == nil {
			t.PrepareAttempt = prepareAttempt
		}
		hc.Transport = &preparing{t: t, prepare: prepare}
		c.PrepareRetry = nil
	}
	c.HTTPClient = &hc
	c.CheckRetry, c.Backoff = p.CheckRetry, p.Backoff
	return nil
}

// httpTransport returns c's http.Client's Transport, or nil.
func httpTransport(c *retryablehttp.Client) http.RoundTripper {
	if c.HTTPClient == nil {
		return nil
	}
	return c.HTTPClient.Transport
}

// prepareKey is the context key under which a [preparing] passes a
// client's PrepareRetry to [prepareAttempt].
type prepareKey struct{}

// preparing is the Transport of a client that has a PrepareRetry: it sends
// each request through t with prepare in its context, for t's
// PrepareAttempt. Clients that share t keep their own PrepareRetry.
type preparing struct {
	t       *pace.Transport
	prepare retryablehttp.PrepareRetry
}

// RoundTrip sends req through t, prepare in a shallow copy's context.
func (p *preparing) RoundTrip(req *http.Request) (*http.Response, error) {
	if req == nil {
		return p.t.RoundTrip(nil)
	}
	resp, err := p.t.RoundTrip(req.WithContext(context.WithValue(req.Context(), prepareKey{}, p.prepare)))
	if resp != nil {
		resp.Request = req
	}
	return resp, err
}

// CloseIdleConnections closes t's idle connections.
func (p *preparing) CloseIdleConnections() { p.t.CloseIdleConnections() }

// prepareAttempt is the PrepareAttempt Install sets: it calls the
// PrepareRetry in req's context, if any, once pace's waits are over. Then
// it rewinds req's body from req.GetBody, as go-retryablehttp's Do does
// before each attempt: a PrepareRetry that signs the body reads it through
// GetBody, which for an io.ReadSeeker body seeks and returns the reader
// the body shares.
func prepareAttempt(req *http.Request, _ int) error {
	f, _ := req.Context().Value(prepareKey{}).(retryablehttp.PrepareRetry)
	if f == nil {
		return nil
	}
	if err := f(req); err != nil {
		return &prepareError{err: err}
	}
	if req.GetBody == nil || req.Body == nil || req.Body == http.NoBody {
		return nil
	}
	body, err := req.GetBody()
	if err != nil {
		return &prepareError{err: err}
	}
	old := req.Body
	req.Body = body
	return old.Close()
}

// isPrepareAttempt reports whether f is [prepareAttempt], set by an
// earlier Install (funcs compare only to nil, so by code pointer).
func isPrepareAttempt(f func(*http.Request, int) error) bool {
	return reflect.ValueOf(f).Pointer() == reflect.ValueOf(prepareAttempt).Pointer()
}

// prepareError is the error of a client's PrepareRetry, called by
// [prepareAttempt]; CheckRetry stops the retries on it.
type prepareError struct{ err error }

func (e *prepareError) Error() string { return e.err.Error() }
func (e *prepareError) Unwrap() error { return e.err }
