package pace

// TEMPORARY: stand-ins for pieces other helpers are writing (retry.go,
// jitter.go, body.go, retryafter.go, keyed.go). Each is replaced by the real
// function when it lands in main, and this file is then deleted.

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/cenkalti/backoff/v4"
)

func pendingRetryableStatus(code int) bool {
	switch code {
	case 408, 429, 500, 502, 503, 504:
		return true
	}
	return false
}

func pendingRetryableError(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ce *tls.CertificateVerificationError
	if errors.As(err, &ce) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed)
}

func pendingIdempotent(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	_, ok := req.Header["Idempotency-Key"]
	return ok
}

func pendingServerDelay(resp *http.Response, now time.Time) (time.Duration, bool) {
	v := resp.Header.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

func pendingNewBackOff(throttle bool) backoff.BackOff {
	initial := 100 * time.Millisecond
	if throttle {
		initial = time.Second
	}
	return backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(initial),
		backoff.WithMultiplier(2),
		backoff.WithMaxInterval(20*time.Second),
		backoff.WithRandomizationFactor(0),
		backoff.WithMaxElapsedTime(0),
	)
}

func pendingJitter(d time.Duration) time.Duration {
	if d <= 1 {
		return max(d, 1)
	}
	return 1 + rand.N(d)
}

const pendingMaxBufferedBody = 1 << 20

// pendingBufferBody reads up to limit bytes of body. ok is false when the
// body is longer; rest then replays what was read followed by the unread
// remainder.
func pendingBufferBody(body io.ReadCloser, limit int64) (buf []byte, rest io.ReadCloser, ok bool, err error) {
	b, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err != nil {
		body.Close()
		return nil, nil, false, err
	}
	if int64(len(b)) > limit {
		return nil, struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(b), body), body}, false, nil
	}
	body.Close()
	return b, nil, true, nil
}

func pendingDrainAndClose(body io.ReadCloser) {
	io.CopyN(io.Discard, body, 64<<10)
	body.Close()
}

func newHostStore(l Limit) (Limiter, error) {
	return nil, errors.New("pace: keyed store not available yet")
}

const (
	DefaultMaxAttempts     = 3
	DefaultMaxRetryAfter   = 5 * time.Minute
	DefaultMaxBufferedBody = 1 << 20
)

const (
	DefaultThrottleBackoffInitial = time.Second
	DefaultBackoffMax             = 20 * time.Second
)

func pendingBackoffDelay(n int, initial, maxDelay time.Duration) time.Duration {
	d := initial
	for i := 1; i < n; i++ {
		if d >= maxDelay-d {
			return maxDelay
		}
		d *= 2
	}
	return d
}

func pendingJitterThrottle(d time.Duration) time.Duration {
	if d <= time.Second {
		return time.Second
	}
	return time.Second + rand.N(d-time.Second+1)
}
