package pace

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/pacehttp/pace/retry"
)

// TestTransportSharedKeyedLimiter: one Keyed set as the Limiter of two
// Transports holds one limit and one pause for both. A 429 with
// Retry-After: 2 seen through the first pauses the key for the second too;
// when the pause ends one probe goes, and the second Transport's request
// waits for its answer. The Keyed is the Transport's own kind of limiter,
// so the server's quota headers reach it as they reach the Keyed stores of
// Limits.
func TestTransportSharedKeyedLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k, err := NewKeyed(TokenBucket(PerSecond(100), 10), KeyedOptions{})
		require.NoError(t, err)
		srv := &ctxServer{start: time.Now(), handle: func(n int, _ *http.Request) (*http.Response, error) {
			if n == 1 {
				return testhttp.Response(http.StatusTooManyRequests, "Retry-After", "2"), nil
			}
			return testhttp.Response(http.StatusOK, "RateLimit", `"default";r=0;t=5`), nil
		}}
		a := &Transport{Base: srv, Limiter: k, Retry: retry.Policy{MaxAttempts: 1}}
		b := &Transport{Base: srv, Limiter: k, Retry: retry.Policy{MaxAttempts: 1}}

		code, err := get(t, a, t.Context(), "http://api.test/a")
		require.NoError(t, err)
		assert.Equal(t, http.StatusTooManyRequests, code)
		assert.Equal(t, time.Now().Add(2*time.Second), k.PausedUntil("api.test"), "the 429 through a pauses the shared key")

		code, err = get(t, b, t.Context(), "http://api.test/b")
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, []time.Duration{0, 2 * time.Second}, srv.arrivals(), "b's request is the probe, sent when a's pause ends")

		// The probe's answer said the quota is spent for 5 s: both
		// Transports' requests wait for it.
		assert.Equal(t, time.Now().Add(5*time.Second), k.PausedUntil("api.test"))
		code, err = get(t, a, t.Context(), "http://api.test/a")
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, []time.Duration{0, 2 * time.Second, 7 * time.Second}, srv.arrivals())
	})
}
