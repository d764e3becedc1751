// Package peer holds what the bench commands need to run pace's peers
// fairly.
package peer

import (
	"net/http"

	"golang.org/x/time/rate"
)

// RatePaced waits on an x/time/rate Limiter before every request it sends:
// go-retryablehttp has no pacer, so this wraps its HTTPClient's Transport,
// and every attempt, retries included, is paced. On a refused wait it
// closes the request's body and returns the Limiter's error.
type RatePaced struct {
	Next    http.RoundTripper
	Limiter *rate.Limiter
}

// RoundTrip waits on the Limiter, then sends req through Next.
func (r *RatePaced) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := r.Limiter.Wait(req.Context()); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	return r.Next.RoundTrip(req)
}
