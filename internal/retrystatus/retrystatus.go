// Package retrystatus holds the rule of which response statuses are
// retried, for the root Transport's retries and package batch's requeues.
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
