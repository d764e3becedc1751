package pace

import (
	"net/http"
	"net/http/httptrace"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/pacehttp/pace/throttle"
)

// opaque hides the Limiter it wraps behind throttle.Limiter alone, as a
// user's wrapper or another store does: the Transport can reach nothing
// but Wait, Depart and Settle.
type opaque struct{ throttle.Limiter }

// TestWrappedKeyedLearnsAsKeyed: what the Transport learns from an answer
// (the server's quota headers, a throttle without a hint that cuts the
// adaptive rate or widens the margin) reaches any throttle.Limiter through Settle's Outcome, so
// a wrapper of Keyed sends at exactly the instants Keyed itself does.
// Before, the Transport handed quota and cut to a *Keyed alone, through
// private methods, and a wrapper never heard them.
func TestWrappedKeyedLearnsAsKeyed(t *testing.T) {
	scenarios := []struct {
		name   string
		limit  Limit
		sends  int // attempts the 8 requests make
		answer func(n int) *http.Response
		// paced checks that the scenario's lesson shows in the instants,
		// so that equal instants are no accident of nothing learnt.
		paced func(t *testing.T, at []time.Duration)
	}{
		{
			name: "quota headers", sends: 8,
			answer: func(n int) *http.Response { // 4 left of 20, reset in 10 s: 2 s apart
				return testhttp.Response(http.StatusOK, "X-RateLimit-Remaining", "4", "X-RateLimit-Reset", "10")
			},
			paced: func(t *testing.T, at []time.Duration) {
				assert.GreaterOrEqual(t, at[2]-at[1], 2*time.Second, "spread over the reset")
			},
		},
		{
			// A burst the requests do not use up: the limit does not hold
			// them back, so the 429 is the server's lower limit.
			name: "adaptive cut", sends: 9,
			limit: TokenBucket(PerSecond(10), 10),
			answer: func(n int) *http.Response {
				if n == 3 {
					return testhttp.Response(http.StatusTooManyRequests)
				}
				return testhttp.Response(http.StatusOK)
			},
			paced: func(t *testing.T, at []time.Duration) {
				assert.Greater(t, at[len(at)-1]-at[len(at)-2], 100*time.Millisecond, "slower than the 10/s limit after the cut")
			},
		},
		{
			// Requests the limit holds back to their slots: the 429 is
			// the server's clock, and the margin widens.
			name: "learnt margin", sends: 9,
			limit: TokenBucket(PerSecond(10), 1),
			answer: func(n int) *http.Response {
				if n == 6 {
					return testhttp.Response(http.StatusTooManyRequests)
				}
				return testhttp.Response(http.StatusOK)
			},
			paced: func(t *testing.T, at []time.Duration) {
				assert.Equal(t, 5*time.Millisecond, at[2]-at[1]-100*time.Millisecond, "the widest margin before the key knows its server")
				assert.Equal(t, 1500*time.Microsecond, at[5]-at[4]-100*time.Millisecond, "the base margin before")
				assert.Equal(t, 3*time.Millisecond, at[len(at)-1]-at[len(at)-2]-100*time.Millisecond, "twice the margin after")
			},
		},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			run := func(wrap bool) []time.Duration {
				var at []time.Duration
				synctest.Test(t, func(t *testing.T) {
					k, err := NewKeyed(sc.limit, KeyedOptions{})
					require.NoError(t, err)
					var lim throttle.Limiter = k
					if wrap {
						lim = opaque{k}
					}
					start := time.Now()
					base := testhttp.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
						if tr := httptrace.ContextClientTrace(req.Context()); tr != nil && tr.WroteRequest != nil {
							tr.WroteRequest(httptrace.WroteRequestInfo{}) // written at once
						}
						at = append(at, time.Since(start))
						return sc.answer(len(at)), nil
					})
					tr := &Transport{Base: base, Limiter: lim}
					for i := range 8 {
						assert.Equal(t, http.StatusOK, roundTrip(t, tr, http.MethodGet, "http://api.test/"+strconv.Itoa(i)))
					}
				})
				return at
			}
			direct, wrapped := run(false), run(true)
			require.Len(t, direct, sc.sends)
			sc.paced(t, direct)
			assert.Equal(t, direct, wrapped, "a wrapper of Keyed sends when Keyed does")
		})
	}
}
