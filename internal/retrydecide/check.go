package retrydecide

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	"github.com/pacehttp/pace/internal/hdr"
	"github.com/pacehttp/pace/internal/idempotent"
	"github.com/pacehttp/pace/internal/retrystatus"
	"github.com/pacehttp/pace/retry"
)

// Executor applies a retry.Policy to the attempts of a request: pace's
// default rules, the Policy's Decide, the idempotency key and the retry
// decision (Decide). Its fields are set before first use and not changed
// after; its methods only read them and are safe for concurrent use.
type Executor struct {
	Policy retry.Policy
	// ServerDelay returns the delay resp names, read at now: Retry-After
	// and the reset headers, as pace.RetryAfter reads them. nil: none.
	ServerDelay func(resp *http.Response, now time.Time) (time.Duration, bool)
	// MinPause and ThrottlePause are the pauses of a throttled key:
	// pace.MinThrottlePause and pace.DefaultThrottlePause.
	MinPause, ThrottlePause time.Duration
}

// serverDelay calls ServerDelay.
func (p *Executor) serverDelay(resp *http.Response, now time.Time) (time.Duration, bool) {
	if p.ServerDelay == nil || resp == nil {
		return 0, false
	}
	return p.ServerDelay(resp, now)
}

// Failed reports whether an attempt that ended with resp or err (its
// request's context ctx), retried or not (again, Check's verdict), is a
// retryable failure, whether or not its request may repeat it: what costs
// retry budget.
func (p *Executor) Failed(ctx context.Context, resp *http.Response, err error, again bool) bool {
	return again || (resp != nil && p.RetryResponse(resp)) || (err != nil && classOf(ctx, err) != errFinal)
}

// firstValue returns the first value of the canonical key in h without
// its optional whitespace (RFC 9110 §5.6.3), or "". It never allocates.
func firstValue(h http.Header, canonicalKey string) string {
	if vs := h[canonicalKey]; len(vs) > 0 {
		return strings.Trim(vs[0], " \t")
	}
	return ""
}

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

// RetryStatus reports whether code is one of the statuses to retry.
func (p *Executor) RetryStatus(code int) bool { return retrystatus.Retried(p.Policy.Statuses, code) }

// idempotencyHeader returns the canonical name of the idempotency header.
func (p *Executor) idempotencyHeader() string {
	if p.Policy.IdempotencyHeader == "" {
		return hdr.IdempotencyKey
	}
	return http.CanonicalHeaderKey(p.Policy.IdempotencyHeader)
}

// hasIdempotencyKey reports whether req carries the idempotency header
// (see retry.Policy.IdempotencyHeader for what counts).
func (p *Executor) hasIdempotencyKey(req *http.Request) bool {
	name := p.Policy.IdempotencyHeader
	if name != "" {
		name = http.CanonicalHeaderKey(name)
	}
	_, ok := idempotent.Key(req.Header, name)
	return ok
}

// replaySafe reports whether req may be sent again when the server may have
// processed it: its method is idempotent (RFC 9110 §9.2.2), it carries an
// idempotency key, or the policy retries every method.
func (p *Executor) replaySafe(req *http.Request) bool {
	return idempotent.Method(req.Method) || p.Policy.RetryNonIdempotent || p.hasIdempotencyKey(req)
}

// Check decides whether to retry after attempt number attempt (from 1) of
// req ended with resp or err (exactly one non-nil). It applies the default
// rules of retry.Policy, then Decide. reason says why, for observers; it is
// empty for a plain success. hook is what Decide saw and set (its Wait and
// Fail), nil when there is no Decide. check does not look at the attempt
// count or the request's deadline: the Transport checks those. It reads
// resp.Body only when Decide asks (retry.Check.Body), and is safe for
// concurrent use.
func (p *Executor) Check(req *http.Request, resp *http.Response, err error, attempt int) (again bool, reason retry.Reason, hook *retry.Check) {
	if err != nil {
		again, reason = p.checkError(req, err)
	} else {
		again, reason = p.checkResponse(req, resp)
	}
	if p.Policy.Decide == nil {
		return again, reason, nil
	}
	c := &retry.Check{Request: req, Response: resp, Err: err, Attempt: attempt, Retry: again, Reason: reason}
	decided := p.Policy.Decide(c)
	if resp != nil && resp.StatusCode < 400 {
		decided = false // a success or a redirect is never retried, whatever Decide says
	}
	if (decided != again || c.Fail != nil) && c.Reason == reason {
		c.Reason = retry.ReasonDecided
	}
	return decided, c.Reason, c
}

func (p *Executor) checkResponse(req *http.Request, resp *http.Response) (bool, retry.Reason) {
	if resp == nil {
		return false, ""
	}
	if resp.StatusCode >= 400 { // the hint counts on error responses only: no header lookup on success
		if hint := firstValue(resp.Header, hdrStripeShouldRetry); hint != "" {
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
	if !p.RetryResponse(resp) {
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

func (p *Executor) checkError(req *http.Request, err error) (bool, retry.Reason) {
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

// WithIdempotencyKey returns req unchanged, or, when AddIdempotencyKey is
// set and req is a POST or PATCH that lacks the idempotency header, a clone
// of req (same context, same Body) whose header carries a fresh random key.
// The Transport calls it once per request, before the first attempt, so
// every attempt sends the same key. The caller's request is never modified.
func (p *Executor) WithIdempotencyKey(req *http.Request) *http.Request {
	if !p.Policy.AddIdempotencyKey || !idempotent.WantsKey(req.Method) || p.hasIdempotencyKey(req) {
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

// RetryResponse reports whether resp's status is one to retry: one of the
// policy's statuses, or a 403 that is a throttle (retrystatus.Throttle) when the
// policy retries a 429.
func (p *Executor) RetryResponse(resp *http.Response) bool {
	if resp.StatusCode == http.StatusForbidden {
		_, delayed := p.serverDelay(resp, time.Now())
		return delayed && p.RetryStatus(http.StatusTooManyRequests)
	}
	return p.RetryStatus(resp.StatusCode)
}
