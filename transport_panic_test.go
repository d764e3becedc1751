package pace

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace/internal/testhttp"
)

// TestTransportPanicReleasesPermit: a panic in Base or PrepareAttempt
// unwinds RoundTrip with the attempt's Permit unsettled. A caller that
// recovers it (an HTTP server, an asynq worker) must not find the key
// locked: the limiter hears of it as of a transport error, so a probe
// hands its role on. Before, the probe's role was held for good, and every
// later request of the key waited its whole MaxWait and failed.
func TestTransportPanicReleasesPermit(t *testing.T) {
	for _, where := range []string{"Base", "PrepareAttempt"} {
		t.Run(where, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := 0
				tr := &Transport{MaxWait: 2 * time.Second, MaxRetryAfter: time.Minute}
				tr.Base = testhttp.RoundTripperFunc(func(*http.Request) (*http.Response, error) {
					n++
					if n == 1 {
						return testhttp.Response(http.StatusTooManyRequests, "Retry-After", "1"), nil
					}
					if n == 2 && where == "Base" {
						panic("boom in the probe")
					}
					return testhttp.Response(http.StatusOK), nil
				})
				if where == "PrepareAttempt" {
					tr.PrepareAttempt = func(_ *http.Request, attempt int) error {
						if attempt == 2 {
							panic("boom before the probe")
						}
						return nil
					}
				}
				func() {
					defer func() { assert.NotNil(t, recover(), "the panic reaches the caller") }()
					resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "http://api.test/", ""))
					if err == nil {
						resp.Body.Close()
					}
				}()
				time.Sleep(time.Second) // the pause is over
				start := time.Now()
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "http://api.test/", ""))
				require.NoError(t, err, "the key is not locked after the panic")
				resp.Body.Close()
				assert.Equal(t, http.StatusOK, resp.StatusCode)
				assert.Less(t, time.Since(start), time.Second, "no wait for a probe that will never answer")
			})
		})
	}
}
