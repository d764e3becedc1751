package pace

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/pacehttp/pace/retry"
)

// signingKey is the shared secret of the signature tests.
var signingKey = []byte("whsec-test")

// sign returns the hex HMAC-SHA256 of the timestamp, method, path and body,
// the shape of Stripe's and many payment APIs' request signatures (and of
// AWS SigV4's string to sign, simplified).
func sign(ts, method, path string, body []byte) string {
	m := hmac.New(sha256.New, signingKey)
	m.Write([]byte(ts + "\n" + method + "\n" + path + "\n"))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// TestPrepareAttemptResigns: a server that rejects a signature over a
// timestamp older than 1 s, and throttles the first two attempts for 2 s
// each, sees a fresh, valid signature on every attempt, because
// PrepareAttempt signs pace's copy of each attempt after its waits. The
// caller's request is never modified.
func TestPrepareAttemptResigns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rejected atomic.Int32
		srv := &testhttp.Server{Handle: func(n int, r testhttp.Received) (*http.Response, error) {
			ts, err := strconv.ParseInt(r.Header.Get("X-Timestamp"), 10, 64)
			if err != nil || time.Since(time.Unix(ts, 0)) > time.Second ||
				r.Header.Get("X-Signature") != sign(r.Header.Get("X-Timestamp"), r.Method, "/v1/charges", r.Body) {
				rejected.Add(1)
				return testhttp.Response(http.StatusUnauthorized), nil
			}
			if n <= 2 {
				return testhttp.Response(http.StatusTooManyRequests, "Retry-After", "2"), nil
			}
			return testhttp.Response(http.StatusOK), nil
		}}
		var attempts []int
		tr := &Transport{Base: srv, PrepareAttempt: func(req *http.Request, attempt int) error {
			attempts = append(attempts, attempt)
			body, err := req.GetBody()
			if err != nil {
				return err
			}
			b, _ := io.ReadAll(body)
			ts := strconv.FormatInt(time.Now().Unix(), 10)
			req.Header.Set("X-Timestamp", ts)
			req.Header.Set("X-Signature", sign(ts, req.Method, req.URL.Path, b))
			req.Header.Set("X-Attempt", strconv.Itoa(attempt))
			return nil
		}}
		req := newRequest(t, t.Context(), http.MethodPut, "http://api.test/v1/charges", `{"amount":100}`)
		before := testhttp.Snap(req)

		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()

		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Zero(t, rejected.Load(), "signatures rejected")
		assert.Equal(t, []int{1, 2, 3}, attempts)
		got := srv.Requests()
		require.Len(t, got, 3)
		for i, r := range got {
			assert.Equal(t, strconv.Itoa(i+1), r.Header.Get("X-Attempt"))
			assert.Equal(t, `{"amount":100}`, string(r.Body), "attempt %d body", i+1)
		}
		assert.NotEqual(t, got[0].Header.Get("X-Timestamp"), got[2].Header.Get("X-Timestamp"), "a fresh timestamp")
		assert.Empty(t, before.Diff(req), "caller's request modified")
		assert.Empty(t, req.Header.Get("X-Signature"))
		assert.Same(t, req, resp.Request)
	})
}

// tokenSource is a bearer token that a test refreshes.
type tokenSource struct {
	refreshes atomic.Int32
}

func (s *tokenSource) token() string   { return "tok-" + strconv.Itoa(int(s.refreshes.Load())) }
func (s *tokenSource) refresh() string { s.refreshes.Add(1); return s.token() }

// TestPrepareAttemptRefreshesTokenAfter401: a 401 leads to exactly one
// token refresh (in Decide) and one retry, which carries the new token
// (set by PrepareAttempt); a second 401 is final.
func TestPrepareAttemptRefreshesTokenAfter401(t *testing.T) {
	for _, tt := range []struct {
		name       string
		valid      string // the token the server accepts
		wantStatus int
		wantSent   int
	}{
		{"the refreshed token works", "tok-1", http.StatusOK, 2},
		{"the refreshed token is refused too", "tok-none", http.StatusUnauthorized, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &testhttp.Server{Handle: func(_ int, r testhttp.Received) (*http.Response, error) {
					if r.Header.Get("Authorization") != "Bearer "+tt.valid {
						return testhttp.Response(http.StatusUnauthorized), nil
					}
					return testhttp.Response(http.StatusOK), nil
				}}
				src := &tokenSource{}
				tr := &Transport{
					Base: srv,
					PrepareAttempt: func(req *http.Request, _ int) error {
						req.Header.Set("Authorization", "Bearer "+src.token())
						return nil
					},
					Retry: retry.Policy{
						Decide: func(c *retry.Check) bool {
							if c.Response != nil && c.Response.StatusCode == http.StatusUnauthorized && c.Attempt == 1 {
								src.refresh()
								return true
							}
							return c.Retry
						},
					},
				}
				req := newRequest(t, t.Context(), http.MethodGet, "http://api.test/v1/me", "")
				req.Header.Set("Authorization", "Bearer caller-token")

				resp, err := tr.RoundTrip(req)
				require.NoError(t, err)
				resp.Body.Close()

				assert.Equal(t, tt.wantStatus, resp.StatusCode)
				assert.EqualValues(t, 1, src.refreshes.Load(), "token refreshes")
				require.Equal(t, tt.wantSent, srv.Count(), "attempts sent")
				got := srv.Requests()
				assert.Equal(t, "Bearer tok-0", got[0].Header.Get("Authorization"))
				assert.Equal(t, "Bearer tok-1", got[1].Header.Get("Authorization"))
				assert.Equal(t, "Bearer caller-token", req.Header.Get("Authorization"), "caller's header modified")
			})
		})
	}
}

// TestPrepareAttemptError: an error from PrepareAttempt sends nothing
// more and comes back as it is on the first attempt, in an *AttemptsError
// on a later one; the request body is closed either way.
func TestPrepareAttemptError(t *testing.T) {
	errSign := errors.New("signing key unavailable")
	for _, failOn := range []int{1, 2} {
		t.Run("attempt "+strconv.Itoa(failOn), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &testhttp.Server{Steps: []testhttp.Step{testhttp.Status(http.StatusServiceUnavailable)}}
				tr := &Transport{Base: srv, Retry: retry.Policy{NewBackOff: constBackOff(time.Second)}, PrepareAttempt: func(_ *http.Request, attempt int) error {
					if attempt == failOn {
						return errSign
					}
					return nil
				}}
				body := testhttp.NewOneShot("payload")
				req := newRequest(t, t.Context(), http.MethodPut, "http://api.test/v1", "")
				req.Body = body

				resp, err := tr.RoundTrip(req)
				require.Nil(t, resp)
				require.ErrorIs(t, err, errSign)
				var ae *AttemptsError
				assert.Equal(t, failOn > 1, errors.As(err, &ae), "an *AttemptsError: %v", err)
				assert.Equal(t, failOn-1, srv.Count(), "attempts sent")
				assert.True(t, body.Closed(), "request body closed")
			})
		})
	}
}
