package pace

import (
	"context"
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

// TestErrorOnGiveUp: with ErrorOnGiveUp, a final retryable status comes
// back as an *AttemptsError carrying the response (status, headers, the
// first 4 KiB of the body in memory; the original body closed), as
// go-retryablehttp's ErrorHandler sees it; by default the same response
// comes back with a nil error and its body unread. A status that is never
// retried (404) is a response either way.
func TestErrorOnGiveUp(t *testing.T) {
	longBody := `{"error":"overloaded"}` + strings.Repeat(" ", 8<<10)
	for _, tt := range []struct {
		name       string
		on         bool
		status     int
		headers    []string
		wantErr    bool
		wantReason retry.Reason
		wantSent   int
	}{
		{"default: the last 503 with a nil error", false, http.StatusServiceUnavailable, nil, false, "", 3},
		{"on: the last 503 as an error", true, http.StatusServiceUnavailable, nil, true, retry.ReasonAttempts, 3},
		{"on: a delay over MaxRetryAfter", true, http.StatusTooManyRequests, []string{"Retry-After", "9999999999"}, true, retry.ReasonDelayTooLong, 1},
		{"on: a 404 is a response", true, http.StatusNotFound, nil, false, "", 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var bodies []*testhttp.Body
				srv := &testhttp.Server{Handle: func(int, testhttp.Received) (*http.Response, error) {
					resp := testhttp.ResponseBody(tt.status, longBody, append([]string{"X-Request-Id", "req_42"}, tt.headers...)...)
					bodies = append(bodies, resp.Body.(*testhttp.Body))
					return resp, nil
				}}
				tr := &Transport{Base: srv, ErrorOnGiveUp: tt.on, Retry: retry.Policy{NewBackOff: constBackOff(time.Second)}}
				req := newRequest(t, t.Context(), http.MethodGet, "http://api.test/v1", "")

				resp, err := tr.RoundTrip(req)
				require.Equal(t, tt.wantSent, srv.Count(), "attempts sent")
				last := bodies[len(bodies)-1]
				if !tt.wantErr {
					require.NoError(t, err)
					defer resp.Body.Close()
					assert.Equal(t, tt.status, resp.StatusCode)
					assert.Zero(t, last.BytesRead(), "body unread")
					assert.False(t, last.Closed(), "body left to the caller")
					return
				}
				require.Nil(t, resp)
				var ae *AttemptsError
				require.ErrorAs(t, err, &ae)
				assert.Equal(t, tt.wantSent, ae.Attempts)
				assert.Equal(t, tt.status, ae.StatusCode)
				assert.Equal(t, tt.wantReason, ae.Reason)
				assert.NoError(t, ae.Err)
				require.NotNil(t, ae.Response)
				assert.Equal(t, tt.status, ae.Response.StatusCode)
				assert.Equal(t, "req_42", ae.Response.Header.Get("X-Request-Id"))
				assert.Same(t, req, ae.Response.Request)
				assert.True(t, last.Closed(), "the original body is closed")
				got, err := io.ReadAll(ae.Response.Body)
				require.NoError(t, err)
				assert.True(t, longBody[:4<<10] == string(got), "the body's first 4 KiB: %d bytes", len(got))
				assert.EqualValues(t, 4<<10, ae.Response.ContentLength)
				assert.Contains(t, ae.Error(), "last status")
				assert.NotContains(t, ae.Error(), "<nil>")
			})
		})
	}
}

// TestErrorOnGiveUpDeadline: when the wait would outlast the deadline,
// the error says so (ErrWaitExceedsDeadline) and, with ErrorOnGiveUp,
// holds the response too; without it, the response is closed.
func TestErrorOnGiveUpDeadline(t *testing.T) {
	for _, on := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			var body *testhttp.Body
			srv := &testhttp.Server{Handle: func(int, testhttp.Received) (*http.Response, error) {
				resp := testhttp.ResponseBody(http.StatusServiceUnavailable, "down", "Retry-After", "30")
				body = resp.Body.(*testhttp.Body)
				return resp, nil
			}}
			tr := &Transport{Base: srv, ErrorOnGiveUp: on}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			resp, err := tr.RoundTrip(newRequest(t, ctx, http.MethodGet, "http://api.test/v1", ""))
			require.Nil(t, resp)
			require.ErrorIs(t, err, ErrWaitExceedsDeadline)
			var ae *AttemptsError
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, retry.ReasonDeadline, ae.Reason)
			assert.True(t, body.Closed(), "the original body is closed")
			if !on {
				assert.Nil(t, ae.Response)
				return
			}
			require.NotNil(t, ae.Response)
			assert.Equal(t, http.StatusServiceUnavailable, ae.Response.StatusCode)
			got, _ := io.ReadAll(ae.Response.Body)
			assert.Equal(t, "down", string(got))
		})
	}
}

// TestErrorOnGiveUpThroughClient: an http.Client wraps the error in a
// *url.Error; errors.As still finds the response.
func TestErrorOnGiveUpThroughClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &testhttp.Server{Steps: []testhttp.Step{testhttp.Status(http.StatusBadGateway)}}
		client := &http.Client{Transport: &Transport{Base: srv, ErrorOnGiveUp: true, Retry: retry.Policy{MaxAttempts: 1}}}
		resp, err := client.Get("http://api.test/v1")
		require.Nil(t, resp)
		var ae *AttemptsError
		require.ErrorAs(t, err, &ae)
		require.NotNil(t, ae.Response)
		assert.Equal(t, http.StatusBadGateway, ae.Response.StatusCode)
		assert.Equal(t, "pace: 1 attempt, last status 502 (gave up: MaxAttempts reached)", ae.Error())
	})
}
