package pace

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/pacehttp/pace/internal/hdr"
	"github.com/pacehttp/pace/internal/idempotent"
	"github.com/pacehttp/pace/internal/retrydecide"
	"github.com/pacehttp/pace/internal/retrystatus"
	"github.com/pacehttp/pace/retry"
)

// retryPolicy is a [retry.Policy] with the Transport's decisions on it:
// which statuses, errors and methods are retried, and the idempotency key.
// The Transport converts its Retry field, copied on first use, to one.
// Its methods only read it, and are safe for concurrent use.
type retryPolicy retry.Policy

// Reasons of the default decision that no event carries. They are
// constants so that a decision allocates nothing. The default decision
// also gives retry.ReasonNotIdempotent, retry.ReasonServerHint and, when
// Decide changes it, retry.ReasonDecided.
const (
	reasonRetryableStatus retry.Reason = "retryable status"
	reasonFinalStatus     retry.Reason = "status not retryable"
	reasonServerSaysYes   retry.Reason = "server said Stripe-Should-Retry: true"
)

// hdrStripeShouldRetry is Stripe's explicit retry hint (Stripe API
// reference, "Idempotent requests" and "Errors": the header says whether a
// request should be retried, overriding status-based rules).
const hdrStripeShouldRetry = "Stripe-Should-Retry"

// validate reports the first invalid setting of p as a *ConfigError whose
// Field is relative to the Policy ("Statuses", "Budget.TTL"; the Transport
// prefixes "Retry."), as retrydecide.Validate finds it.
func (p *retryPolicy) validate() error {
	if fe := retrydecide.Validate((*retry.Policy)(p)); fe != nil {
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

// retryStatus reports whether code is one of the statuses to retry.
func (p *retryPolicy) retryStatus(code int) bool { return retrystatus.Retried(p.Statuses, code) }

// idempotencyHeader returns the canonical name of the idempotency header.
func (p *retryPolicy) idempotencyHeader() string {
	if p.IdempotencyHeader == "" {
		return hdr.IdempotencyKey
	}
	return http.CanonicalHeaderKey(p.IdempotencyHeader)
}

// hasIdempotencyKey reports whether req carries the idempotency header
// (see retry.Policy.IdempotencyHeader for what counts).
func (p *retryPolicy) hasIdempotencyKey(req *http.Request) bool {
	name := p.IdempotencyHeader
	if name != "" {
		name = http.CanonicalHeaderKey(name)
	}
	_, ok := idempotent.Key(req.Header, name)
	return ok
}

// replaySafe reports whether req may be sent again when the server may have
// processed it: its method is idempotent (RFC 9110 §9.2.2), it carries an
// idempotency key, or the policy retries every method.
func (p *retryPolicy) replaySafe(req *http.Request) bool {
	return idempotent.Method(req.Method) || p.RetryNonIdempotent || p.hasIdempotencyKey(req)
}

// check decides whether to retry after attempt number attempt (from 1) of
// req ended with resp or err (exactly one non-nil). It applies the default
// rules of retry.Policy, then Decide. reason says why, for observers; it is
// empty for a plain success. hook is what Decide saw and set (its Wait and
// Fail), nil when there is no Decide. check does not look at the attempt
// count or the request's deadline: the Transport checks those. It reads
// resp.Body only when Decide asks (retry.Check.Body), and is safe for
// concurrent use.
func (p *retryPolicy) check(req *http.Request, resp *http.Response, err error, attempt int) (again bool, reason retry.Reason, hook *retry.Check) {
	if err != nil {
		again, reason = p.checkError(req, err)
	} else {
		again, reason = p.checkResponse(req, resp)
	}
	if p.Decide == nil {
		return again, reason, nil
	}
	c := &retry.Check{Request: req, Response: resp, Err: err, Attempt: attempt, Retry: again, Reason: reason}
	decided := p.Decide(c)
	if resp != nil && resp.StatusCode < 400 {
		decided = false // a success or a redirect is never retried, whatever Decide says
	}
	if (decided != again || c.Fail != nil) && c.Reason == reason {
		c.Reason = retry.ReasonDecided
	}
	return decided, c.Reason, c
}

func (p *retryPolicy) checkResponse(req *http.Request, resp *http.Response) (bool, retry.Reason) {
	if resp == nil {
		return false, ""
	}
	if resp.StatusCode >= 400 { // the hint counts on error responses only: no header lookup on success
		if hint := trimOWS(headerValue(resp.Header, hdrStripeShouldRetry)); hint != "" {
			switch {
			case strings.EqualFold(hint, "false"):
				return false, retry.ReasonServerHint
			case strings.EqualFold(hint, "true"):
				if !p.replaySafe(req) {
					return false, retry.ReasonNotIdempotent
				}
				return true, reasonServerSaysYes
			}
		}
	}
	if !p.retryResponse(resp) {
		if resp.StatusCode < 400 {
			return false, ""
		}
		return false, reasonFinalStatus
	}
	if !p.replaySafe(req) {
		return false, retry.ReasonNotIdempotent
	}
	return true, reasonRetryableStatus
}

func (p *retryPolicy) checkError(req *http.Request, err error) (bool, retry.Reason) {
	class, reason := classifyError(req.Context(), err)
	switch class {
	case errNotSent:
		return true, reason
	case errTransient:
		if !p.replaySafe(req) {
			return false, retry.ReasonNotIdempotent
		}
		return true, reason
	}
	return false, reason
}

// withIdempotencyKey returns req unchanged, or, when AddIdempotencyKey is
// set and req is a POST or PATCH that lacks the idempotency header, a clone
// of req (same context, same Body) whose header carries a fresh random key.
// The Transport calls it once per request, before the first attempt, so
// every attempt sends the same key. The caller's request is never modified.
func (p *retryPolicy) withIdempotencyKey(req *http.Request) *http.Request {
	if !p.AddIdempotencyKey || !idempotent.WantsKey(req.Method) || p.hasIdempotencyKey(req) {
		return req
	}
	r := req.Clone(req.Context())
	if r.Header == nil {
		r.Header = make(http.Header)
	}
	r.Header[p.idempotencyHeader()] = []string{newIdempotencyKey()}
	return r
}

// newIdempotencyKey returns a random UUID version 4 (RFC 9562 §5.4), e.g.
// "3b241101-e2bb-4255-8caf-4136c566a962", from crypto/rand.
func newIdempotencyKey() string {
	var u [16]byte
	_, _ = rand.Read(u[:])  // never fails since Go 1.24 (it crashes instead)
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // variant 10xx (RFC 9562)
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:36], u[10:16])
	return string(b[:])
}

// errClass is what a transport error says about retrying.
type errClass uint8

const (
	errFinal     errClass = iota // never retry: cancelled, permanent or unknown
	errTransient                 // retry if the request is safe to replay
	errNotSent                   // nothing reached the server: retry any method
)

// classifyError sorts a transport error from one attempt whose request had
// context ctx, using errors.Is and errors.As; only net/http errors that
// have no type are matched by text, in netHTTPErrorClass. reason names the
// kind of error for observers. In order:
//
//   - ctx done, or context.Canceled anywhere: final ("request canceled").
//   - TLS and certificate errors (tls.CertificateVerificationError, the
//     x509 error types, tls.RecordHeaderError, a TLS alert from the
//     server): final; sending again will not change a certificate.
//   - untyped net/http errors, by text (see netHTTPErrorClass).
//   - a DNS error: final when the name does not exist, not sent when the
//     lookup timed out or failed temporarily.
//   - a dial or proxy-connect failure, or connection refused: not sent.
//   - connection reset or aborted, broken pipe, ETIMEDOUT, io.EOF,
//     io.ErrUnexpectedEOF, net.ErrClosed, a net.Error timeout, or
//     context.DeadlineExceeded while ctx is still live (a Transport's own
//     timeout, not the caller's deadline): transient.
//   - anything else: final ("unknown transport error").
func classifyError(ctx context.Context, err error) (errClass, retry.Reason) {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return errFinal, "request canceled"
	}
	if isTLSError(err) {
		return errFinal, "TLS or certificate error"
	}
	if class, reason, ok := netHTTPErrorClass(err); ok {
		return class, reason
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		if dnsErr.IsTimeout || dnsErr.IsTemporary {
			return errNotSent, "DNS lookup failed temporarily"
		}
		return errFinal, "DNS lookup failed"
	}
	var opErr *net.OpError
	if errors.Is(err, syscall.ECONNREFUSED) ||
		(errors.As(err, &opErr) && (opErr.Op == "dial" || opErr.Op == "proxyconnect")) {
		return errNotSent, "connection failed"
	}
	switch {
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE):
		return errTransient, "connection reset"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return errTransient, "connection closed"
	case errors.Is(err, syscall.ETIMEDOUT), errors.Is(err, context.DeadlineExceeded):
		return errTransient, reasonTimeout
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return errTransient, reasonTimeout
	}
	return errFinal, "unknown transport error"
}

// reasonTimeout is classifyError's reason for a timeout of the attempt.
const reasonTimeout retry.Reason = "timeout"

// isTimeout reports whether err, a transport error of a request with
// context ctx, is a timeout of the attempt, not of the caller's context:
// the connection it went on may be silent (see Transport.Base).
func isTimeout(ctx context.Context, err error) bool {
	class, reason := classifyError(ctx, err)
	return class == errTransient && reason == reasonTimeout
}

// isTLSError reports whether err comes from TLS: certificate verification,
// a non-TLS reply to a TLS handshake, or an alert sent by the server.
func isTLSError(err error) bool {
	var (
		verify    *tls.CertificateVerificationError
		record    tls.RecordHeaderError
		alert     tls.AlertError
		ech       *tls.ECHRejectionError
		unknownCA x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		roots     x509.SystemRootsError
		critical  x509.UnhandledCriticalExtension
		opErr     *net.OpError
	)
	return errors.As(err, &verify) || errors.As(err, &record) || errors.As(err, &alert) ||
		errors.As(err, &ech) || errors.As(err, &unknownCA) || errors.As(err, &hostname) ||
		errors.As(err, &invalid) || errors.As(err, &roots) || errors.As(err, &critical) ||
		(errors.As(err, &opErr) && opErr.Op == "remote error") // crypto/tls's alert from the peer
}

// netHTTPErrorClass classifies, by their text, the errors net/http (Go 1.25,
// 1.26) returns without an exported type. It is the only place pace matches
// error text (STYLE.md §2.3). ok is false when err is none of them.
//
//   - "unsupported protocol scheme", "no Host in request URL", "nil
//     Request.URL": an invalid request, final.
//   - "stopped after N redirects": http.Client's redirect limit; a
//     RoundTripper should not see it, and it is final if it does.
//   - "http: ContentLength=N with Body length M": the request's declared
//     length is wrong, final.
//   - "net/http: request canceled": the request was cancelled, final.
//   - "http2: server sent GOAWAY", "Server's graceful shutdown GOAWAY",
//     "http2: client connection lost", "server closed idle connection",
//     "HTTP/1.x transport connection broken": the connection went away,
//     transient.
func netHTTPErrorClass(err error) (class errClass, reason retry.Reason, ok bool) {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "unsupported protocol scheme"),
		strings.Contains(msg, "no Host in request URL"),
		strings.Contains(msg, "nil Request.URL"):
		return errFinal, "invalid request URL", true
	case strings.Contains(msg, "stopped after") && strings.Contains(msg, "redirects"):
		return errFinal, "too many redirects", true
	case strings.Contains(msg, "http: ContentLength="):
		return errFinal, "request body length mismatch", true
	case strings.Contains(msg, "net/http: request canceled"):
		return errFinal, "request canceled", true
	case strings.Contains(msg, "server sent GOAWAY"),
		strings.Contains(msg, "graceful shutdown GOAWAY"):
		return errTransient, "HTTP/2 GOAWAY", true
	case strings.Contains(msg, "http2: client connection lost"),
		strings.Contains(msg, "server closed idle connection"),
		strings.Contains(msg, "HTTP/1.x transport connection broken"):
		return errTransient, "connection closed", true
	}
	return errFinal, "", false
}

// isThrottle reports whether an answer with status code and, if fromServer,
// a server delay is a throttle: a 429 Too Many Requests (RFC 6585 §4), or a
// 503 Service Unavailable (RFC 9110 §15.6.4) or 403 Forbidden that names
// when to come back. A throttle pauses its whole key. It is the one test
// of pace for "the server is throttling": a 503 without a delay is an
// outage, and a 403 without one a refusal. GitHub answers its rate limits
// with a 403 and Retry-After, or x-ratelimit-remaining: 0 and
// x-ratelimit-reset (docs.github.com, "Rate limits for the REST API").
func isThrottle(code int, fromServer bool) bool {
	switch code {
	case http.StatusTooManyRequests:
		return true
	case http.StatusServiceUnavailable, http.StatusForbidden:
		return fromServer
	}
	return false
}

// retryResponse reports whether resp's status is one to retry: one of the
// policy's statuses, or a 403 that is a throttle (isThrottle) when the
// policy retries a 429.
func (p *retryPolicy) retryResponse(resp *http.Response) bool {
	if resp.StatusCode == http.StatusForbidden {
		_, _, delayed := serverDelay(resp, time.Now())
		return delayed && p.retryStatus(http.StatusTooManyRequests)
	}
	return p.retryStatus(resp.StatusCode)
}

// attemptEnd is what the retry decision sees of one finished attempt: the
// outcome, the request's situation, and the settings. now is when the
// attempt ended.
type attemptEnd struct {
	now      time.Time
	attempt  int            // the attempt that ended, from 1
	resp     *http.Response // nil when err is set
	err      error
	retry    bool         // retryPolicy.check's verdict
	why      retry.Reason // and its reason
	failed   bool         // a retryable failure, whether or not this request may repeat it
	canRetry bool         // the body can be sent again
	// withdraw takes a retry from the key's retry budget at the given
	// instant and reports whether the budget allowed it; with force it
	// takes it anyway. It is called at most once, for a retry that is
	// otherwise decided; nil means no budget.
	withdraw func(now time.Time, force bool) bool
	strikes  int       // the key's consecutive throttles before this one (Permit.Strikes)
	adaptive bool      // the key has a configured limit, whose rate adapts to throttles without a delay
	deadline time.Time // the context's deadline; zero: none
	// hookWait is retry.Check.Wait: the delay Decide read from the response,
	// taken as the server's; 0: none.
	hookWait time.Duration
	fail     error // retry.Check.Fail: end the call with this error

	maxAttempts   int
	maxRetryAfter time.Duration
	jitter        retry.Jitter
	customBackoff bool // the schedule comes from retry.Policy.NewBackOff
	// backoff returns the next wait of the request's backoff schedule,
	// jittered, and false when the schedule says stop; throttled selects
	// the schedule for a throttle. It is called at most once.
	backoff func(throttled bool) (time.Duration, bool)
	rnd     func(n int64) int64 // for the jitter of the default pause; nil: math/rand/v2
	// handBack: the caller waits out a throttle's pause in its own line
	// (package batch, see internal/queued); a throttle whose wait is
	// longer than MinThrottlePause is returned to it, not retried.
	handBack bool
}

// verdict is the retry decision for one attempt.
type verdict struct {
	retry    bool          // send the request again
	wait     time.Duration // before the next attempt
	pause    time.Duration // > 0: the answer was a throttle; pause the key this long
	why      retry.Reason  // the retry's reason (retry.ReasonServerDelay, retry.ReasonBackoff), or why a retryable failure is not retried
	refused  time.Duration // the server delay or wait that was refused, for retry.ReasonDelayTooLong and retry.ReasonDeadline
	deadline bool          // the wait would outlast the context's deadline
	fail     error         // end the call with this error (retry.Check.Fail); why is retry.ReasonDecided
	cut      bool          // a throttle without a delay of an adaptive key: lower its rate
	handBack bool          // a throttle returned unretried to a caller that waits out the pause (attemptEnd.handBack)
}

// decide is the retry decision: from what an attempt ended with, whether to
// send the request again, after how long, whether to pause its key, and if a
// retryable failure is not retried, why. It reads the response's headers,
// never its body, and takes explicit time; apart from the backoff schedule
// and the jitter it is a pure function. The rules:
//
//   - The wait is the server's delay when it gave one (retry.Check.Wait, a
//     delay Decide read from the body, or else Retry-After and the other
//     headers serverDelay reads), else the backoff schedule's next wait,
//     jittered.
//   - A throttle (isThrottle) pauses the key: for the server's delay, never
//     less than MinThrottlePause. A server delay below MinThrottlePause
//     (Retry-After: 0, a past date, a reset already reached) is legal (RFC
//     9110 §10.2.3) and its first throttle pauses for MinThrottlePause, but
//     on a key with strikes it is the server's overload, not a schedule:
//     the pause is MinThrottlePause doubled by the key's strikes (100 ms
//     on the second consecutive throttle, 200 ms on the third), jittered,
//     never under MinThrottlePause, capped at retry.DefaultBackoffMax. Without a
//     delay (a 429 that names none)
//     for DefaultThrottlePause doubled by the key's strikes, jittered, never
//     under retry.DefaultThrottleBackoffInitial, or with a NewBackOff schedule its
//     next wait, never under a second (env0/terraform-provider-env0#1127).
//     Every pause is capped at maxRetryAfter; the request's own wait is the
//     pause. A key whose configured limit adapts (adaptive) slows its rate
//     instead (verdict.cut, adaptiveRate): its first throttle without a
//     delay pauses it only for MinThrottlePause; a probe throttled again
//     gets the long pause, and the rate drops again.
//   - Decide's Fail ends the call (retry.ReasonDecided), after a throttle's
//     pause is set.
//   - A retryable failure is not retried, in this order, when: the policy
//     said no (its reason); the server's delay exceeds maxRetryAfter
//     (retry.ReasonDelayTooLong: a retry before it is certain to fail,
//     hashicorp/go-retryablehttp#247); the body cannot be sent again; the
//     attempts are spent; the schedule says stop; the wait would outlast
//     the deadline (retry.ReasonDeadline, decided at once, not slept); or, last,
//     so that only a retry otherwise made takes from it, the budget is
//     spent (unless the server named a delay: the server itself set the
//     pace, and the retry is counted anyway). Just before the budget, a
//     throttle whose wait is longer than MinThrottlePause is handed back
//     unretried when the caller waits out pauses itself (handBack).
func decide(in attemptEnd) verdict {
	status := statusOf(in.resp)
	var v verdict
	var serverWait time.Duration
	fromServer := false
	if in.resp != nil && (in.retry || status >= 400) {
		serverWait, _, fromServer = serverDelay(in.resp, in.now)
	}
	if in.resp != nil && in.hookWait > 0 {
		serverWait, fromServer = in.hookWait, true
	}
	throttle := isThrottle(status, fromServer)
	if !in.retry && !throttle {
		switch {
		case in.fail != nil:
			v.why, v.fail = retry.ReasonDecided, in.fail
		case in.failed:
			v.why = in.why
		}
		return v
	}
	wait, stop := time.Duration(0), false
	v.why = retry.ReasonBackoff
	switch {
	case fromServer:
		wait, v.why = serverWait, retry.ReasonServerDelay
	case in.retry || throttle:
		w, ok := in.backoff(isThrottleStatus(status)) // a 503 without a delay: the throttle schedule
		wait, stop = w, !ok
	}
	if throttle {
		if fromServer {
			v.pause = max(serverWait, MinThrottlePause)
			if serverWait < MinThrottlePause && in.strikes > 0 {
				// Retry-After: 0 again (RFC 9110 §10.2.3 allows it): the
				// server is overloaded, not keeping a schedule. Double
				// from MinThrottlePause per strike, as a 429 without a
				// delay doubles from DefaultThrottlePause.
				v.pause = retrydecide.ApplyJitter(in.jitter, retrydecide.BackoffDelay(in.strikes+1, MinThrottlePause, retry.DefaultBackoffMax),
					0, MinThrottlePause, retry.DefaultBackoffMax, in.rnd)
			}
			v.pause = min(v.pause, in.maxRetryAfter)
			wait = max(wait, v.pause)
		} else if in.adaptive && in.strikes == 0 && !in.customBackoff {
			// The key's rate adapts (adaptiveRate): it slows down instead
			// of pausing for long; a brief pause and a probe, as after
			// Retry-After: 0. A probe throttled again gets the long pause.
			v.pause, v.cut = min(MinThrottlePause, in.maxRetryAfter), true
			wait = v.pause
		} else {
			v.cut = in.adaptive
			keyWait := wait // a NewBackOff schedule is the caller's choice: its next wait
			if !in.customBackoff {
				keyWait = retrydecide.ApplyJitter(in.jitter, retrydecide.BackoffDelay(in.strikes+1, DefaultThrottlePause, retry.DefaultBackoffMax),
					0, DefaultThrottlePause, retry.DefaultBackoffMax, in.rnd)
			}
			v.pause = min(max(wait, keyWait, retry.DefaultThrottleBackoffInitial), in.maxRetryAfter)
			wait = v.pause
		}
	}
	switch {
	case in.fail != nil:
		v.why, v.fail = retry.ReasonDecided, in.fail
		return v
	case !in.retry:
		v.why = ""
		if in.failed {
			v.why = in.why
		}
		return v
	case fromServer && serverWait > in.maxRetryAfter:
		v.why, v.refused = retry.ReasonDelayTooLong, serverWait
		return v
	case !in.canRetry:
		v.why = retry.ReasonNotReplayable
		return v
	case in.attempt >= in.maxAttempts:
		v.why = retry.ReasonAttempts
		return v
	case stop:
		v.why = retry.ReasonBackoffStop
		return v
	case !in.deadline.IsZero() && in.deadline.Sub(in.now) < wait:
		v.why, v.refused, v.deadline = retry.ReasonDeadline, wait, true
		return v
	case in.handBack && v.pause > 0 && wait > MinThrottlePause:
		v.why, v.handBack = "", true // no give-up: the caller retries after the pause
		return v
	}
	serverPaced := fromServer && serverWait > 0
	if in.withdraw != nil && !in.withdraw(in.now, serverPaced) && !serverPaced {
		v.why = retry.ReasonBudget
		return v
	}
	v.retry, v.wait = true, wait
	return v
}
