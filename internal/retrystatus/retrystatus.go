// Package retrystatus holds the rules of which response statuses are
// retried, for the root Transport's retries and package batch's requeues,
// and which are a throttle.
package retrystatus

import (
	"net/http"
	"slices"
)

// Default returns the statuses retried by default, in a new slice: 408,
// 429, 500, 502, 503 and 504 (see retry.DefaultStatuses).
func Default() []int {
	return []int{
		http.StatusRequestTimeout,
		http.StatusTooManyRequests,
		http.StatusInternalServerError,
		http.StatusBadGateway,
		http.StatusServiceUnavailable,
		http.StatusGatewayTimeout,
	}
}

// Retried reports whether code is retried under list, a retry.Policy's
// Statuses: nil means Default, a non-nil empty list retries no status.
func Retried(list []int, code int) bool {
	if list != nil {
		return slices.Contains(list, code)
	}
	switch code {
	case http.StatusRequestTimeout, http.StatusTooManyRequests,
		http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// Of returns the Statuses that rt, a *pace.Transport, retries for req (its
// host's, per pace.Hosts, else its Retry's), and ok false when rt is no
// *pace.Transport. Package pace sets it when it is initialized; it is
// read-only after that and safe for concurrent use.
var Of = func(rt http.RoundTripper, req *http.Request) (list []int, ok bool) { return nil, false }

// Throttle reports whether an answer with status code and, if fromServer,
// a server delay is a throttle: a 429 Too Many Requests (RFC 6585 §4), or a
// 503 Service Unavailable (RFC 9110 §15.6.4) or 403 Forbidden that names
// when to come back. A throttle pauses its whole key. It is the one test
// of pace for "the server is throttling": a 503 without a delay is an
// outage, and a 403 without one a refusal. GitHub answers its rate limits
// with a 403 and Retry-After, or x-ratelimit-remaining: 0 and
// x-ratelimit-reset (docs.github.com, "Rate limits for the REST API").
func Throttle(code int, fromServer bool) bool {
	switch code {
	case http.StatusTooManyRequests:
		return true
	case http.StatusServiceUnavailable, http.StatusForbidden:
		return fromServer
	}
	return false
}

// ThrottleStatus reports whether code is 429 Too Many Requests (RFC 6585
// §4) or 503 Service Unavailable (RFC 9110 §15.6.4), the statuses that can
// be a throttle (Throttle; a 503 only with a delay). Reset headers count
// as a delay on these statuses, and either one without a usable delay
// starts the request's default backoff at
// retry.DefaultThrottleBackoffInitial rather than retry.DefaultBackoffInitial.
func ThrottleStatus(code int) bool {
	return code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable
}
