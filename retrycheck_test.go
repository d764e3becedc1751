package pace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/pacehttp/pace/retry"
)

// TestRetryCheckBodyPrefix: Decide reads the first 4 KiB of a 10 KiB body
// to find an error code, and the caller still gets the whole body, byte
// for byte; a discarded response read that way is still closed.
func TestRetryCheckBodyPrefix(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		conflict := `{"error":{"code":"lock_timeout"}}` + strings.Repeat("x", 10<<10)
		long := `{"id":"ch_1"}` + strings.Repeat("y", 10<<10)
		var bodies []*testhttp.Body
		srv := &testhttp.Server{Handle: func(n int, _ testhttp.Received) (*http.Response, error) {
			resp := testhttp.ResponseBody(http.StatusOK, long)
			if n == 1 {
				resp = testhttp.ResponseBody(http.StatusConflict, conflict) // not retried by default
			}
			bodies = append(bodies, resp.Body.(*testhttp.Body))
			return resp, nil
		}}
		var prefixes [][]byte
		tr := &Transport{Base: srv, Retry: retry.Policy{
			NewBackOff: constBackOff(time.Second),
			Decide: func(c *retry.Check) bool {
				b, err := c.Body()
				require.NoError(t, err)
				again, _ := c.Body()
				assert.Equal(t, b, again, "a second call returns the same bytes")
				prefixes = append(prefixes, b)
				return c.Retry || bytes.Contains(b, []byte(`"lock_timeout"`)) // Stripe's retryable 409
			},
		}}

		resp, err := tr.RoundTrip(newRequest(t, t.Context(), http.MethodGet, "http://api.test/v1", ""))
		require.NoError(t, err)
		got, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())

		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.True(t, long == string(got), "the caller reads the whole body: %d bytes of %d", len(got), len(long))
		require.Len(t, prefixes, 2)
		assert.True(t, conflict[:4<<10] == string(prefixes[0]), "the 409's first 4 KiB: %d bytes", len(prefixes[0]))
		assert.True(t, long[:4<<10] == string(prefixes[1]), "the 200's first 4 KiB: %d bytes", len(prefixes[1]))
		require.Len(t, bodies, 2)
		assert.True(t, bodies[0].Closed(), "discarded 409 closed")
		assert.True(t, bodies[1].Closed(), "returned body closed by the caller's Close")
	})
}

var errCardDeclined = errors.New("card declined")

// TestRetryCheckFail: Decide ends the call with an error of its own (like
// go-retryablehttp's CheckRetry returning one), on a retryable status and
// on a success alike: nothing more is sent, the response body is closed,
// and the error matches with errors.Is.
func TestRetryCheckFail(t *testing.T) {
	for _, status := range []int{http.StatusServiceUnavailable, http.StatusOK, http.StatusPaymentRequired} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var body *testhttp.Body
				srv := &testhttp.Server{Handle: func(int, testhttp.Received) (*http.Response, error) {
					resp := testhttp.ResponseBody(status, `{"decline_code":"insufficient_funds"}`)
					body = resp.Body.(*testhttp.Body)
					return resp, nil
				}}
				var events []Event
				tr := &Transport{Base: srv, OnEvent: func(e Event) { events = append(events, e) },
					Retry: retry.Policy{
						Decide: func(c *retry.Check) bool {
							if b, _ := c.Body(); bytes.Contains(b, []byte("decline_code")) {
								c.Fail = errCardDeclined
							}
							return true // Fail wins
						},
					}}

				resp, err := tr.RoundTrip(newRequest(t, t.Context(), http.MethodGet, "http://api.test/v1", ""))
				require.Nil(t, resp)
				require.ErrorIs(t, err, errCardDeclined)
				var ae *AttemptsError
				require.ErrorAs(t, err, &ae)
				assert.Equal(t, AttemptsError{Attempts: 1, StatusCode: status, Reason: retry.ReasonDecided, Err: errCardDeclined}, *ae)
				assert.Equal(t, 1, srv.Count(), "attempts sent")
				assert.True(t, body.Closed(), "response body closed")
				require.NotEmpty(t, events)
				last := events[len(events)-1]
				assert.Equal(t, EventGiveUp, last.Kind)
				assert.Equal(t, retry.ReasonDecided, last.Reason)
				assert.ErrorIs(t, last.Err, errCardDeclined)
			})
		})
	}
}

// TestRetryCheckFailKeepsResponse: with ErrorOnGiveUp, the response that
// Decide's Fail ended the call on comes back in AttemptsError.Response, as a
// give-up's does (go-retryablehttp's CheckRetry error keeps the response
// for its ErrorHandler): status, headers, the first 4 KiB of the body
// (the bytes Decide read with Body included), the original body closed.
func TestRetryCheckFailKeepsResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		long := `{"error":{"code":"card_declined"}}` + strings.Repeat("x", 10<<10)
		var body *testhttp.Body
		srv := &testhttp.Server{Handle: func(int, testhttp.Received) (*http.Response, error) {
			resp := testhttp.ResponseBody(http.StatusPaymentRequired, long, "X-Request-Id", "req_7")
			body = resp.Body.(*testhttp.Body)
			return resp, nil
		}}
		tr := &Transport{Base: srv, ErrorOnGiveUp: true, Retry: retry.Policy{
			Decide: func(c *retry.Check) bool {
				if b, _ := c.Body(); bytes.Contains(b, []byte("card_declined")) {
					c.Fail = errCardDeclined
				}
				return c.Retry
			},
		}}
		req := newRequest(t, t.Context(), http.MethodPost, "http://api.test/v1/charges", "amount=1")

		resp, err := tr.RoundTrip(req)
		require.Nil(t, resp)
		require.ErrorIs(t, err, errCardDeclined)
		var ae *AttemptsError
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, retry.ReasonDecided, ae.Reason)
		require.NotNil(t, ae.Response, "the response Fail ended the call on")
		assert.Equal(t, http.StatusPaymentRequired, ae.Response.StatusCode)
		assert.Equal(t, "req_7", ae.Response.Header.Get("X-Request-Id"))
		assert.Same(t, req, ae.Response.Request)
		got, err := io.ReadAll(ae.Response.Body)
		require.NoError(t, err)
		assert.True(t, long[:4<<10] == string(got), "the body's first 4 KiB: %d bytes", len(got))
		assert.EqualValues(t, 4<<10, ae.Response.ContentLength)
		assert.True(t, body.Closed(), "the original body is closed")
	})
}

// TestRetryCheckNeverRetriesSuccess: Decide returning true on a success
// or a redirect is ignored: the response comes back, unread, with a nil
// error, also with ErrorOnGiveUp; one attempt is sent.
func TestRetryCheckNeverRetriesSuccess(t *testing.T) {
	for _, status := range []int{http.StatusOK, http.StatusNoContent, http.StatusNotModified} {
		for _, onGiveUp := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d ErrorOnGiveUp=%v", status, onGiveUp), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var body *testhttp.Body
					srv := &testhttp.Server{Handle: func(int, testhttp.Received) (*http.Response, error) {
						resp := testhttp.ResponseBody(status, "ok")
						body = resp.Body.(*testhttp.Body)
						return resp, nil
					}}
					var events []Event
					tr := &Transport{Base: srv, ErrorOnGiveUp: onGiveUp, OnEvent: func(e Event) { events = append(events, e) },
						Retry: retry.Policy{
							Decide: func(*retry.Check) bool { return true },
						}}

					resp, err := tr.RoundTrip(newRequest(t, t.Context(), http.MethodGet, "http://api.test/v1", ""))
					require.NoError(t, err)
					defer resp.Body.Close()
					assert.Equal(t, status, resp.StatusCode)
					assert.Equal(t, 1, srv.Count(), "attempts sent")
					assert.Zero(t, body.BytesRead(), "body unread")
					for _, e := range events {
						assert.NotContains(t, []EventKind{EventRetry, EventGiveUp}, e.Kind)
					}
					st := tr.Stats()
					require.Len(t, st, 1)
					assert.Zero(t, st[0].Retries)
					assert.Zero(t, st[0].GiveUps)
				})
			})
		}
	}
}

// TestRetryCheckWaitFromBody: a delay the server gives in the body (as
// some APIs do, e.g. a JSON "retry_after" in seconds) becomes the wait
// before the next attempt, in place of the backoff; above MaxRetryAfter it
// is not slept, and the response comes back at once; on a 429 it pauses
// the whole key.
func TestRetryCheckWaitFromBody(t *testing.T) {
	decide := func(c *retry.Check) bool {
		b, _ := c.Body()
		var msg struct {
			RetryAfter float64 `json:"retry_after"`
		}
		if json.Unmarshal(b, &msg) == nil && msg.RetryAfter > 0 {
			c.Wait = time.Duration(msg.RetryAfter * float64(time.Second))
		}
		return c.Retry
	}
	for _, tt := range []struct {
		name     string
		status   int
		body     string
		wantGap  time.Duration // between the attempts; 0: no retry
		wantCode int
	}{
		{"500 with a body delay", http.StatusInternalServerError, `{"retry_after":7.5}`, 7500 * time.Millisecond, http.StatusOK},
		{"429 with a body delay", http.StatusTooManyRequests, `{"retry_after":3}`, 3 * time.Second, http.StatusOK},
		{"a body delay over MaxRetryAfter", http.StatusServiceUnavailable, `{"retry_after":120}`, 0, http.StatusServiceUnavailable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &testhttp.Server{Handle: func(n int, _ testhttp.Received) (*http.Response, error) {
					if n == 1 {
						return testhttp.ResponseBody(tt.status, tt.body), nil
					}
					return testhttp.Response(http.StatusOK), nil
				}}
				var throttles []time.Duration
				tr := &Transport{Base: srv, MaxRetryAfter: time.Minute, Retry: retry.Policy{
					NewBackOff: constBackOff(time.Hour),
					Decide:     decide,
				},
					OnEvent: func(e Event) {
						if e.Kind == EventThrottle {
							throttles = append(throttles, e.Delay)
						}
					}}
				start := time.Now()
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), http.MethodGet, "http://api.test/v1", ""))
				require.NoError(t, err)
				resp.Body.Close()

				assert.Equal(t, tt.wantCode, resp.StatusCode)
				got := srv.Requests()
				if tt.wantGap == 0 {
					assert.Len(t, got, 1)
					assert.Zero(t, time.Since(start), "no wait")
					return
				}
				require.Len(t, got, 2)
				assert.Equal(t, tt.wantGap, got[1].At.Sub(got[0].At))
				if tt.status == http.StatusTooManyRequests {
					assert.Equal(t, []time.Duration{tt.wantGap}, throttles, "the key paused for the body's delay")
				}
			})
		})
	}
}

// TestRetryCheckWaitDeadline: a body delay that would outlast the
// context's deadline fails at once, nothing slept.
func TestRetryCheckWaitDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &testhttp.Server{Steps: []testhttp.Step{testhttp.Status(http.StatusServiceUnavailable)}}
		tr := &Transport{Base: srv, Retry: retry.Policy{
			Decide: func(c *retry.Check) bool {
				c.Wait = 30 * time.Second
				return c.Retry
			},
		}}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		start := time.Now()
		resp, err := tr.RoundTrip(newRequest(t, ctx, http.MethodGet, "http://api.test/v1", ""))
		require.Nil(t, resp)
		require.ErrorIs(t, err, ErrWaitExceedsDeadline)
		assert.Zero(t, time.Since(start))
		assert.Equal(t, 1, srv.Count())
	})
}

// TestRetryDecideGiveUpText: both ways Decide ends a call that would have
// been retried, returning false and setting Fail, give up with
// retry.ReasonDecided, and the error says so in words that fit both (it read
// "retry.Policy.Decide said no", also for a Fail).
func TestRetryDecideGiveUpText(t *testing.T) {
	const want = "(gave up: retry.Policy.Decide ended the call)"
	tests := []struct {
		name    string
		decide  func(c *retry.Check) bool
		step    testhttp.Step
		wantErr string
	}{
		{"returned false", func(*retry.Check) bool { return false }, testhttp.Fail(io.EOF),
			"pace: 1 attempt " + want + ": EOF"},
		{"set Fail", func(c *retry.Check) bool { c.Fail = errCardDeclined; return true }, testhttp.Status(http.StatusServiceUnavailable),
			"pace: 1 attempt, last status 503 " + want + ": " + errCardDeclined.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := &testhttp.Server{Steps: []testhttp.Step{tt.step}}
			var events []Event
			tr := &Transport{Base: srv, Retry: retry.Policy{Decide: tt.decide}, OnEvent: func(e Event) { events = append(events, e) }}
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), http.MethodGet, "http://api.test/v1", ""))
			require.Nil(t, resp)
			var ae *AttemptsError
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, retry.ReasonDecided, ae.Reason)
			assert.Equal(t, tt.wantErr, err.Error())
			require.NotEmpty(t, events)
			assert.Equal(t, retry.ReasonDecided, events[len(events)-1].Reason)
			assert.Equal(t, 1, srv.Count())
		})
	}
}
