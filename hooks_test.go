package pace

import (
	"bytes"
	"fmt"
	"log/slog"
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

func TestEventsOfOneRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &testhttp.Server{Steps: []testhttp.Step{
			testhttp.Status(http.StatusTooManyRequests, "Retry-After", "2"),
			testhttp.Status(http.StatusBadGateway),
			testhttp.Status(http.StatusBadGateway),
		}}
		var got []string
		tr := &Transport{
			Base:  srv,
			Retry: retry.Policy{NewBackOff: constBackOff(time.Second)},
			OnEvent: func(e Event) {
				got = append(got, fmt.Sprintf("%v/%s #%d %v %d", e.Kind, e.Reason, e.Attempt, e.Delay > 0, e.StatusCode))
				if e.Key != "api.test" || e.Request == nil {
					t.Errorf("event without key or request: %+v", e)
				}
			},
		}
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "http://api.test/", ""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := []string{
			"throttle/ #1 true 429",
			"retry/server-delay #1 true 429",
			"retry/backoff #2 true 502",
			"give-up/attempts #3 false 502",
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}

func TestEventsWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &testhttp.Server{}
		var waits []string
		tr := &Transport{Base: srv, Limiter: &spacer{every: time.Second}, OnEvent: func(e Event) {
			if e.Kind == EventWait {
				waits = append(waits, fmt.Sprint(e.Reason, " ", e.Delay))
			}
		}}
		for range 2 {
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "http://api.test/", ""))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		if fmt.Sprint(waits) != "[limit 1s]" {
			t.Errorf("wait events %q, want [limit 1s]", waits)
		}
	})
}

// TestLogsNeverHoldSecrets: debug logs of every kind of event carry no
// credential: no header value outside the allow-list (Authorization,
// Proxy-Authorization, Cookie, API-key and token headers under any name),
// none named in SecretHeaders, nor the URL's query or user information.
func TestLogsNeverHoldSecrets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		secrets := map[string]string{
			"Authorization":        "Bearer tok-AAAA",
			"Proxy-Authorization":  "Basic cHJveHk6QkJCQg==",
			"Cookie":               "sid=CCCC",
			"X-Api-Key":            "key-DDDD",
			"X-Goog-Api-Key":       "key-EEEE",
			"X-Amz-Security-Token": "tok-FFFF",
			"X-Custom-Cred":        "GGGG",
			// Found in clear by a new-user trial: no list of secret
			// names held them.
			"Ocp-Apim-Subscription-Key": "JJJJ", // Azure API Management
			"X-Access-Key":              "KKKK",
			"Private-Token":             "LLLL", // GitLab
			"X-Secret":                  "MMMM",
			"User-Agent":                "app/1 token=NNNN", // allow-listed, named in SecretHeaders
		}
		srv := &testhttp.Server{Steps: []testhttp.Step{
			testhttp.Status(http.StatusTooManyRequests, "Retry-After", "1"),
			testhttp.Status(http.StatusServiceUnavailable),
			testhttp.Status(http.StatusServiceUnavailable, "Retry-After", "3600"),
		}}
		var buf bytes.Buffer
		tr := &Transport{
			Base:          srv,
			Limiter:       &spacer{every: 1500 * time.Millisecond}, // the retry at 1s waits 0.5s
			Logger:        slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})),
			SecretHeaders: []string{"user-agent"},
		}
		for i := range 2 { // the first call leaves api0.test paused for an hour
			req := newRequest(t, t.Context(), "GET", fmt.Sprintf("https://user:HHHH@api%d.test/v1/items?api_key=IIII", i), "")
			for k, v := range secrets {
				req.Header.Set(k, v)
			}
			req.Header.Set("X-Request-Id", "visible-123")
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		out := buf.String()
		for _, kind := range []string{"throttle", "retry", "give-up", "wait"} {
			if !strings.Contains(out, "pace: "+kind) {
				t.Errorf("no %q record in the log:\n%s", kind, out)
			}
		}
		for _, s := range []string{"AAAA", "cHJveHk6QkJCQg", "CCCC", "DDDD", "EEEE", "FFFF", "GGGG", "HHHH", "IIII", "JJJJ", "KKKK", "LLLL", "MMMM", "NNNN"} {
			if strings.Contains(out, s) {
				t.Errorf("log holds secret %q:\n%s", s, out)
			}
		}
		if !strings.Contains(out, "visible-123") || !strings.Contains(out, "https://api0.test/v1/items") {
			t.Errorf("log lacks the request id or the URL path:\n%s", out)
		}
	})
}

func TestLogsSilentAboveDebug(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &testhttp.Server{Steps: []testhttp.Step{testhttp.Status(503), testhttp.Status(200)}}
		var buf bytes.Buffer
		tr := &Transport{Base: srv, Logger: slog.New(slog.NewTextHandler(&buf, nil))} // Info level
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "http://api.test/", ""))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if buf.Len() != 0 {
			t.Errorf("info-level logger got records:\n%s", buf.String())
		}
	})
}

// TestLogsShowAllowedHeaders: the Logger shows every request header by
// name, the values of the allow-listed ones only, and "[redacted]" for
// the rest, whatever their name.
func TestLogsShowAllowedHeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &testhttp.Server{Steps: []testhttp.Step{testhttp.Status(http.StatusServiceUnavailable), testhttp.Status(http.StatusOK)}}
		var buf bytes.Buffer
		tr := &Transport{Base: srv, Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
		req := newRequest(t, t.Context(), "GET", "http://api.test/", "")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Request-Id", "req-1")
		req.Header.Set("Idempotency-Key", "idem-1")
		req.Header.Set("X-Plain", "not-on-the-list")
		req.Header["x-noncanonical"] = []string{"raw"} // set without canonicalizing
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
		out := buf.String()
		for _, kv := range []string{"header.Content-Type=application/json", "header.X-Request-Id=req-1", "header.Idempotency-Key=idem-1",
			"header.X-Plain=" + redacted, "header.x-noncanonical=" + redacted} {
			assert.Contains(t, out, kv)
		}
		assert.NotContains(t, out, "not-on-the-list")
		assert.NotContains(t, out, "raw")
	})
}
