package pace

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/pacehttp/pace/retry"
)

// botToken is a credential carried in a URL path, as the Telegram Bot API
// has it (https://core.telegram.org/bots/api: "https://api.telegram.org/bot<token>/METHOD_NAME").
const botToken = "123456:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"

// pathScenario sends, through a Transport with hidePath as HidePath, debug
// logging, OnEvent and ErrorOnGiveUp, requests whose path holds botToken,
// so that every kind of event and of error occurs: a throttle, retries,
// limiter waits, a give-up on a delay too long (an *AttemptsError with its
// Response), a give-up on attempts whose Base returned a *url.Error
// holding the URL (as a Base wrapping an http.Client does), and a wait
// refused (a *WaitError). It returns the log, each event as %+v formats
// it, and each returned error's text, with every error of its chain.
func pathScenario(t *testing.T, hidePath bool) (logs string, events, errs []string) {
	var (
		out []string
		buf bytes.Buffer
	)
	synctest.Test(t, func(t *testing.T) {
		srv := &testhttp.Server{Handle: func(n int, r testhttp.Received) (*http.Response, error) {
			u, _ := url.Parse(r.URL)
			if u.Host == "b.test" { // a Base that wraps an http.Client
				return nil, &url.Error{Op: "Get", URL: r.URL, Err: syscall.ECONNRESET}
			}
			switch n {
			case 1:
				return testhttp.Response(http.StatusTooManyRequests, "Retry-After", "1"), nil
			case 2:
				return testhttp.Response(http.StatusServiceUnavailable), nil
			}
			return testhttp.Response(http.StatusServiceUnavailable, "Retry-After", "3600"), nil
		}}
		var evs []string
		tr := &Transport{
			Base:          srv,
			Limits:        Hosts{"*": {Limit: TokenBucket(PerSecond(1), 1)}},
			MaxWait:       time.Second,
			ErrorOnGiveUp: true,
			OnEvent:       func(ev Event) { evs = append(evs, fmt.Sprintf("%+v", ev)) },
			Logger:        slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})),
			HidePath:      hidePath,
		}
		var got []error
		for _, u := range []string{
			"https://a.test/bot" + botToken + "/getMe",       // throttle, retry, give-up (delay too long)
			"https://b.test/bot" + botToken + "/sendMessage", // *url.Error thrice, give-up (attempts)
			"https://a.test/bot" + botToken + "/getMe",       // a.test is paused: the wait is refused
		} {
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", u, ""))
			require.Error(t, err, u)
			require.Nil(t, resp)
			got = append(got, err)
			for e := err; e != nil; e = errors.Unwrap(e) {
				out = append(out, e.Error(), fmt.Sprintf("%+v", e))
			}
		}
		var ae *AttemptsError
		require.ErrorAs(t, got[0], &ae)
		require.NotNil(t, ae.Response, "ErrorOnGiveUp's response")
		assert.Equal(t, retry.ReasonDelayTooLong, ae.Reason)
		var ue *url.Error
		require.ErrorAs(t, got[1], &ue, "Base's *url.Error is still found")
		assert.ErrorIs(t, got[1], syscall.ECONNRESET)
		require.ErrorAs(t, got[1], &ae)
		assert.Equal(t, retry.ReasonAttempts, ae.Reason)
		var we *WaitError
		require.ErrorAs(t, got[2], &we)
		assert.ErrorIs(t, got[2], ErrWaitTooLong)
		events = evs
	})
	for _, kind := range []string{"throttle", "retry", "give-up", "wait"} {
		require.Contains(t, buf.String(), "pace: "+kind, "every kind of event is logged")
	}
	return buf.String(), events, out
}

// TestHidePathKeepsTokenOut: with HidePath, a Telegram Bot API token in
// the path is in no log record, no event as %+v prints it, and no text
// of a returned error or of any error of its chain; without it, the log
// shows the path, as documented, and Base's *url.Error keeps its URL.
func TestHidePathKeepsTokenOut(t *testing.T) {
	logs, events, errs := pathScenario(t, true)
	assert.NotContains(t, logs, botToken)
	assert.NotContains(t, logs, "/getMe")
	assert.Contains(t, logs, "url=https://a.test/[redacted]")
	assert.Contains(t, logs, `Get \"https://b.test/[redacted]\": connection reset by peer`, "the url.Error in the error attribute")
	require.NotEmpty(t, events)
	for _, ev := range events {
		assert.NotContains(t, ev, botToken)
	}
	for _, e := range errs {
		assert.NotContains(t, e, botToken)
	}

	logs, events, errs = pathScenario(t, false)
	assert.Contains(t, logs, "url=https://a.test/bot"+botToken+"/getMe")
	assert.Contains(t, strings.Join(events, "\n"), botToken, "Base's *url.Error in Event.Err")
	assert.Contains(t, strings.Join(errs, "\n"), botToken, "Base's *url.Error in the error returned")
}

// TestHidePathRealTransport: through net/http's own Transport (Base nil)
// and a loopback server that drops every connection, the errors net/http
// returns hold no path, so with HidePath the token is in no record, no
// event and no error RoundTrip returns; the log shows it without HidePath.
func TestHidePathRealTransport(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close() // no answer: the client reads EOF
		}
	}))
	defer srv.Close()
	for _, hide := range []bool{true, false} {
		var buf bytes.Buffer
		var texts []string
		tr := &Transport{
			Base:     srv.Client().Transport.(*http.Transport).Clone(),
			Retry:    retry.Policy{MaxAttempts: 2},
			OnEvent:  func(ev Event) { texts = append(texts, fmt.Sprintf("%+v", ev)) },
			Logger:   slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})),
			HidePath: hide,
		}
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", srv.URL+"/bot"+botToken+"/getMe", ""))
		require.Error(t, err)
		require.Nil(t, resp)
		var ae *AttemptsError
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, 2, ae.Attempts)
		for e := err; e != nil; e = errors.Unwrap(e) {
			texts = append(texts, e.Error(), fmt.Sprintf("%+v", e))
		}
		require.Len(t, texts, 2+2*2, "a retry, a give-up, the *AttemptsError and its EOF")
		for _, s := range texts {
			assert.NotContains(t, s, botToken, "events and errors, HidePath %v", hide)
		}
		assert.Contains(t, buf.String(), "pace: retry")
		if hide {
			assert.NotContains(t, buf.String(), botToken)
		} else {
			assert.Contains(t, buf.String(), "/bot"+botToken+"/getMe")
		}
		tr.CloseIdleConnections()
	}
}
