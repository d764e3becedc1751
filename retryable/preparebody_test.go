package retryable_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/retry"
	"github.com/pacehttp/pace/retryable"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPrepareRetrySignsBody: a PrepareRetry that signs the body, reading
// it through req.GetBody, works under Install as it does on the plain
// client, for an io.ReadSeeker body too: go-retryablehttp's GetBody seeks
// the reader the body shares and returns it, so reading it emptied the
// body pace then sent ("ContentLength=7 with Body length 0" on a fresh
// connection, as a new user's trial found). Each attempt carries the
// whole body and its signature.
func TestPrepareRetrySignsBody(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if string(b) != "payload" || r.Header.Get("X-Sig") != "sig(payload)" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if n.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable) // one retry
		}
	}))
	defer srv.Close()
	sign := func(req *http.Request) error {
		rc, err := req.GetBody()
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(rc)
		req.Header.Set("X-Sig", "sig("+string(b)+")")
		return nil
	}
	for name, body := range map[string]func() any{
		"io.ReadSeeker": func() any { return strings.NewReader("payload") },
		"[]byte":        func() any { return []byte("payload") },
	} {
		t.Run(name, func(t *testing.T) {
			n.Store(0)
			base := &http.Transport{DisableKeepAlives: true} // a fresh connection per attempt
			defer base.CloseIdleConnections()
			c := retryablehttp.NewClient()
			c.Logger = nil
			c.RetryMax = 2
			c.RetryWaitMin, c.RetryWaitMax = time.Millisecond, time.Millisecond
			c.PrepareRetry = sign
			require.NoError(t, (&retryable.Policy{}).Install(c, &pace.Transport{Base: base, Retry: retry.Policy{MaxAttempts: 1}}))
			req, err := retryablehttp.NewRequest(http.MethodPost, srv.URL, body())
			require.NoError(t, err)
			resp, err := c.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, int64(2), n.Load(), "the 503 and the retry, both signed over the whole body")
		})
	}
}
