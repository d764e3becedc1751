package retry

import (
	"net/http"
	"time"

	"github.com/pacehttp/pace/internal/bodyprefix"
)

// Check is what [Policy].Decide sees of one finished attempt. It is a
// struct so that fields can be added later. It is made for one call of
// Decide and is not safe for concurrent use.
type Check struct {
	// Request is the attempt's request. Do not modify it.
	Request *http.Request
	// Response is the attempt's response, nil when Err is set. Its body is
	// unread; do not read or close it (use Body).
	Response *http.Response
	// Err is the attempt's transport error, nil when Response is set.
	Err error
	// Attempt is the number of the attempt that just finished, from 1.
	Attempt int
	// Retry is pace's default decision.
	Retry bool
	// Reason says why, e.g. "retryable status", "connection reset" or
	// ReasonNotIdempotent: the words pace's events use. Decide may
	// replace it.
	Reason Reason

	// Wait, if Decide sets it above zero on an attempt that has a Response, is
	// the delay before the next attempt. It is for a server that names it in
	// the body rather than in a header. It is taken as the server's delay, in
	// place of the headers' (Retry-After and the others pace.RetryAfter
	// reads). It is never jittered or shortened. On a 429 or 503 it pauses the
	// request's whole key. A Wait above the Transport's MaxRetryAfter is not
	// slept: the response goes back unretried (ReasonDelayTooLong). One that
	// would outlast the context's deadline fails at once (ReasonDeadline). It
	// has no effect when Decide returns false, nor after a transport error.
	Wait time.Duration

	// Fail, if Decide sets it, ends the call with that error, whatever Decide
	// returns. Nothing more is sent, and the response's body is closed.
	// RoundTrip returns a *pace.AttemptsError with Reason ReasonDecided whose
	// Err is Fail, so errors.Is and errors.As find it. With the Transport's
	// ErrorOnGiveUp, its Response keeps the response that Fail ended the call
	// on, as for any give-up. It keeps the status, the headers and the first 4
	// KiB of the body (what Body read included). A throttle still pauses the
	// key.
	Fail error

	body     []byte // what Body read
	bodyErr  error
	bodyRead bool
}

// Body returns the first bytes of the response body, at most 4 KiB, for a
// decision that depends on an error code in the body. It reads them the
// first time it is called; later calls return the same bytes. The response
// keeps its whole body. The bytes read are put back in front of the rest.
// So the caller, when the response is returned, reads it from the start.
// err is the read error, if any other than io.EOF. The bytes read before it
// are returned and put back too. Body returns nil, nil when there is no
// Response, or its body is nil or http.NoBody. Reading waits for the server
// to send up to 4 KiB or end the body. So do not call it on a streamed
// response. It is not safe for concurrent use.
func (c *Check) Body() ([]byte, error) {
	if c.bodyRead {
		return c.body, c.bodyErr
	}
	c.bodyRead = true
	if c.Response == nil || c.Response.Body == nil || c.Response.Body == http.NoBody {
		return nil, nil
	}
	orig := c.Response.Body
	c.body, c.bodyErr = bodyprefix.Read(orig, bodyprefix.Max)
	c.Response.Body = bodyprefix.Prepend(c.body, orig)
	return c.body, c.bodyErr
}
