package batch

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// HTTP returns an item function for [Run] that sends one request per item
// through client (nil means http.DefaultClient) and checks the response.
//
// build makes the item's request; it should attach ctx
// (http.NewRequestWithContext) so that cancelling the run cancels the
// request. check judges the response; nil means [CheckResponse]. The
// response's status is recorded for [Result.Status], and its body is closed
// after check returns, with up to 4 KiB drained first so the connection can
// be reused; check may read the body.
//
// Pacing, per-host limits and transport-level retries belong to the
// client's Transport (pace.Transport, for one); the batch sees only the
// final response of each attempt. A final 429 is a throttle: Run pauses
// dispatch and probes, as the package documentation describes.
//
// The returned function is safe for concurrent use if build and check are.
func HTTP[T any](client *http.Client, build func(ctx context.Context, item T) (*http.Request, error), check func(*http.Response) error) func(context.Context, T) error {
	if client == nil {
		client = http.DefaultClient
	}
	if check == nil {
		check = CheckResponse
	}
	return func(ctx context.Context, item T) error {
		req, err := build(ctx, item)
		if err != nil {
			return err
		}
		if req == nil {
			return errNilRequest
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer drainAndClose(resp.Body)
		RecordStatus(ctx, resp.StatusCode)
		return check(resp)
	}
}

var errNilRequest = errors.New("batch: build returned a nil request")

// drainAndClose reads at most 4 KiB of body, so a small unread body does not
// cost the connection, and closes it.
func drainAndClose(body io.ReadCloser) {
	_, _ = io.CopyN(io.Discard, body, 4<<10)
	_ = body.Close()
}

// CheckResponse is the default response check of [HTTP]. It accepts a 2xx
// status. It returns a [*ThrottledError] for 429 Too Many Requests (RFC 6585
// section 4), and for 503 Service Unavailable with a Retry-After header,
// which RFC 9110 section 15.6.4 defines as the server asking for time;
// RetryAfter holds the delay the header gives. Any other status gives a
// [*StatusError].
func CheckResponse(resp *http.Response) error {
	code := resp.StatusCode
	switch {
	case code >= 200 && code < 300:
		return nil
	case code == http.StatusTooManyRequests:
		d, _ := retryAfter(resp.Header, time.Now())
		return &ThrottledError{Status: code, RetryAfter: d}
	case code == http.StatusServiceUnavailable:
		if d, ok := retryAfter(resp.Header, time.Now()); ok {
			return &ThrottledError{Status: code, RetryAfter: d}
		}
	}
	return &StatusError{Code: code}
}

// retryAfter reads the Retry-After header of a response received at now. An
// HTTP-date is taken relative to the response's Date header when it has a
// valid one, so a server clock that differs from ours does not skew the
// delay. ok is false when the header is missing or malformed.
func retryAfter(h http.Header, now time.Time) (d time.Duration, ok bool) {
	if date, err := http.ParseTime(h.Get("Date")); err == nil {
		now = date
	}
	return parseRetryAfter(h.Get("Retry-After"), now)
}

// maxDelaySeconds is the largest whole number of seconds a Duration holds.
const maxDelaySeconds = math.MaxInt64 / int64(time.Second)

// parseRetryAfter interprets a Retry-After value (RFC 9110 section 10.2.3)
// at now: delay-seconds (digits only) or an HTTP-date in any of its three
// forms. A past date gives 0; a delay too large for a Duration saturates. ok
// is false when v is empty or malformed, and then d is 0.
func parseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	if v == "" {
		return 0, false
	}
	if '0' <= v[0] && v[0] <= '9' {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return 0, false
		}
		if s > uint64(maxDelaySeconds) || err != nil {
			return maxDuration, true
		}
		return time.Duration(s) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

// statusKey is the context key of an attempt's status recorder.
type statusKey struct{}

// RecordStatus records code as the HTTP status of the attempt that ctx
// belongs to, so that it shows in [Result.Status]; the last code recorded
// wins. [HTTP] calls it; an item function that makes its own requests may
// too. It does nothing when ctx is not an attempt's context. It is safe for
// concurrent use.
func RecordStatus(ctx context.Context, code int) {
	if p, ok := ctx.Value(statusKey{}).(*atomic.Int64); ok {
		p.Store(int64(code))
	}
}
