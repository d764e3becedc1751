package batch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/pacehttp/pace/retry"
)

// giveUpClient returns a client whose pace.Transport makes two attempts per
// request and sends them to a server that answers the first bad requests
// with status code (and Retry-After: 0 for a 429), then 200; sent counts
// the requests the server saw.
func giveUpClient(errorOnGiveUp bool, code, bad int, sent *atomic.Int32) *http.Client {
	return &http.Client{Transport: &pace.Transport{Retry: retry.Policy{MaxAttempts: 2}, ErrorOnGiveUp: errorOnGiveUp,
		Base: testhttp.RoundTripperFunc(func(*http.Request) (*http.Response, error) {
			if int(sent.Add(1)) <= bad {
				if code == http.StatusTooManyRequests {
					return testhttp.Response(code, "Retry-After", "0"), nil
				}
				return testhttp.Response(code), nil
			}
			return testhttp.Response(http.StatusOK), nil
		})}}
}

func getItem(ctx context.Context, i int) (*http.Request, error) {
	return http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://api.test/items/%d", i), nil)
}

// TestRunErrorOnGiveUpThrottle: with pace.Transport.ErrorOnGiveUp the final
// 429 comes as a *pace.AttemptsError holding the response, not as the
// response; the batch reads the throttle from it (pace.Throttled) and
// treats it as it treats the 429 itself: the host pauses, and no item is
// lost. A server that answers 60 requests with 429 Retry-After: 0: every
// item succeeds, with the option and without.
func TestRunErrorOnGiveUpThrottle(t *testing.T) {
	for _, eog := range []bool{false, true} {
		t.Run(fmt.Sprintf("ErrorOnGiveUp=%v", eog), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var sent atomic.Int32
				client := giveUpClient(eog, http.StatusTooManyRequests, 60, &sent)
				rep, err := Run(t.Context(), ints(4), HTTP(client, getItem, nil),
					Options{Concurrency: 1, Backoff: 50 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
				require.NoError(t, err)
				s := rep.Summary
				t.Logf("%v; %d requests", s, sent.Load())
				assert.Equal(t, 4, s.Succeeded, "%v", s)
				assert.Zero(t, s.Failed, "%v", s)
				assert.Zero(t, s.Requeued, "a throttle is no failure to requeue: %v", s)
				assert.Positive(t, s.Pauses, "the 429s pause the host: %v", s)
				assert.Positive(t, s.Throttled, "%v", s)
				assert.GreaterOrEqual(t, int(sent.Load()), 64, "60 throttled, 4 accepted")
			})
		})
	}
}

// TestRunErrorOnGiveUpRequeue: a final 503 inside a *pace.AttemptsError
// (ErrorOnGiveUp) is the retryable failure the 503 response is without the
// option: the item goes back in line (Options.MaxRequeues), and succeeds
// when the server recovers; a 404 is not retryable either way. Result.Status
// names the status in both cases.
func TestRunErrorOnGiveUpRequeue(t *testing.T) {
	for _, eog := range []bool{false, true} {
		t.Run(fmt.Sprintf("ErrorOnGiveUp=%v", eog), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var sent atomic.Int32
				client := giveUpClient(eog, http.StatusServiceUnavailable, 2, &sent) // the first attempt and its retry
				rep, err := Run(t.Context(), ints(1), HTTP(client, getItem, nil), Options{})
				require.NoError(t, err)
				assert.Equal(t, 1, rep.Summary.Succeeded, "%v", rep.Summary)
				assert.Equal(t, 1, rep.Summary.Requeued, "%v", rep.Summary)
				assert.Zero(t, rep.Summary.Pauses, "a 503 without a delay pauses nothing: %v", rep.Summary)
				assert.Equal(t, 2, rep.Results[0].Attempts)
			})
		})
		t.Run(fmt.Sprintf("ErrorOnGiveUp=%v 503 to the end", eog), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var sent atomic.Int32
				client := giveUpClient(eog, http.StatusServiceUnavailable, 1000, &sent)
				rep, err := Run(t.Context(), ints(1), HTTP(client, getItem, nil), Options{})
				require.Error(t, err)
				res := rep.Results[0]
				assert.Equal(t, Failed, res.Outcome)
				assert.Equal(t, 1+DefaultMaxRequeues, res.Attempts, "the first attempt and the requeues")
				assert.Equal(t, http.StatusServiceUnavailable, res.Status)
				assert.Equal(t, 2*(1+DefaultMaxRequeues), int(sent.Load()), "two attempts each")
				if eog {
					var ae *pace.AttemptsError
					assert.True(t, errors.As(res.Err, &ae), "Err = %v", res.Err)
				}
			})
		})
	}
}
