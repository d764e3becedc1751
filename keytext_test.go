package pace

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/pacehttp/pace/retry"
)

// fingerprint is keyText's form of a key that is not a host, computed here
// the way a caller would to find its key's lines.
func fingerprint(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "key~" + hex.EncodeToString(sum[:])[:12]
}

// TestKeyText: a host key is shown as it is; any other key, and a host too
// long to be one, as "key~" and 12 hex digits of its SHA-256, so the text
// stays short whatever the key.
func TestKeyText(t *testing.T) {
	huge := strings.Repeat("k", 1<<20)
	tests := []struct {
		key   string
		host  bool
		want  string
		shown bool
	}{
		{"api.example", true, "api.example", true},
		{"[::1]:8443", true, "[::1]:8443", true},
		{strings.Repeat("a", maxHostKeyText), true, strings.Repeat("a", maxHostKeyText), true},
		{strings.Repeat("a", maxHostKeyText+1), true, fingerprint(strings.Repeat("a", maxHostKeyText+1)), false},
		{"sk_live_SUPERSECRET", false, fingerprint("sk_live_SUPERSECRET"), false},
		{"api.example", false, fingerprint("api.example"), false}, // chosen by Key: it could be anything
		{huge, false, fingerprint(huge), false},
	}
	for _, tt := range tests {
		got, shown := keyText(tt.key, tt.host)
		assert.Equal(t, tt.want, got, "key of %d bytes, host %v", len(tt.key), tt.host)
		assert.Equal(t, tt.shown, shown)
		assert.LessOrEqual(t, len(got), maxHostKeyText)
	}
	assert.Len(t, fingerprint("x"), len("key~")+12)
}

// TestWithHostKeyCopies: marking a host key copies the WaitError (and the
// AttemptsError around it) and leaves the caller's values alone, since a
// Limiter may return one error value to many calls.
func TestWithHostKeyCopies(t *testing.T) {
	we := &WaitError{Key: "api.test", Err: ErrWaitTooLong}
	ae := &AttemptsError{Attempts: 1, Err: we}
	for _, err := range []error{we, ae} {
		got := withHostKey(err, "api.test")
		assert.NotSame(t, err, got)
		assert.Contains(t, got.Error(), `"api.test"`)
		assert.ErrorIs(t, got, ErrWaitTooLong)
	}
	assert.False(t, we.hostKey, "the original is not changed")
	assert.Same(t, ae.Err, we)
	assert.NotContains(t, we.Error(), "api.test")

	other := &WaitError{Key: "other", Err: ErrWaitTooLong}
	assert.Same(t, other, withHostKey(other, "api.test"), "a WaitError for another key stays as it is")
	eof := errors.New("EOF")
	assert.Equal(t, eof, withHostKey(eof, "api.test"))
	assert.NoError(t, withHostKey(nil, "api.test"))
}

// keyTrial runs the new-user trial that found the API key of Transport.Key
// in clear in logs and error text: a request answered 429 with
// Retry-After: 1 pauses the key, a second request with a 200ms deadline
// cannot wait (a *WaitError), and a third, given two attempts, meets the
// pause's deadline after its first attempt (an *AttemptsError holding a
// *WaitError). It returns the log, the first Transport and the two errors.
func keyTrial(t *testing.T, key func(*http.Request) string) (log string, tr *Transport, waitErr, attemptsErr error) {
	srv := &testhttp.Server{Steps: []testhttp.Step{testhttp.Status(http.StatusTooManyRequests, "Retry-After", "1")}}
	var buf bytes.Buffer
	tr = &Transport{
		Base:   srv,
		Limits: Hosts{"*": {Limit: TokenBucket(PerSecond(1), 1)}},
		Key:    key,
		Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Retry:  retry.Policy{MaxAttempts: 1},
	}
	send := func(tr *Transport, timeout time.Duration) error {
		ctx, cancel := context.WithTimeout(t.Context(), timeout)
		defer cancel()
		req := newRequest(t, ctx, "GET", "http://api.test/v1", "")
		req.Header.Set("X-Api-Key", "sk_live_SUPERSECRET")
		resp, err := tr.RoundTrip(req)
		if resp != nil {
			resp.Body.Close()
		}
		return err
	}
	require.NoError(t, send(tr, time.Minute)) // the 429 comes back as a response
	waitErr = send(tr, 200*time.Millisecond)
	require.ErrorIs(t, waitErr, ErrWaitExceedsDeadline)

	tr2 := &Transport{Base: srv, Key: key, Logger: tr.Logger, Retry: retry.Policy{MaxAttempts: 2}}
	attemptsErr = send(tr2, 200*time.Millisecond)
	var ae *AttemptsError
	require.ErrorAs(t, attemptsErr, &ae)
	require.IsType(t, &WaitError{}, ae.Err)
	return buf.String(), tr, waitErr, attemptsErr
}

// TestChosenKeyNeverShown: a key from Transport.Key (here an API key, as
// the docs suggest) appears in no log record and no error text, only as
// its fingerprint; the fields that hand it to the caller hold it whole.
func TestChosenKeyNeverShown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const secret = "sk_live_SUPERSECRET"
		log, tr, waitErr, attemptsErr := keyTrial(t, func(r *http.Request) string { return r.Header.Get("X-Api-Key") })
		for what, text := range map[string]string{"log": log, "WaitError": waitErr.Error(), "AttemptsError": attemptsErr.Error()} {
			assert.NotContains(t, text, "SUPERSECRET", what)
			assert.Contains(t, text, fingerprint(secret), what)
		}
		assert.Contains(t, log, "key="+fingerprint(secret))
		assert.Contains(t, log, "header.X-Api-Key="+redacted)

		var we *WaitError
		require.ErrorAs(t, waitErr, &we)
		assert.Equal(t, secret, we.Key, "WaitError.Key holds the key")
		require.ErrorAs(t, attemptsErr, &we)
		assert.Equal(t, secret, we.Key)
		st := tr.Stats()
		require.Len(t, st, 1)
		assert.Equal(t, secret, st[0].Key, "Stats.Key holds the key")
		assert.Equal(t, "api.test", st[0].Host)
	})
}

// TestHostKeyShown: with the default key, the request's host, logs and
// error text name the host.
func TestHostKeyShown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log, _, waitErr, attemptsErr := keyTrial(t, nil)
		assert.Contains(t, log, "key=api.test ")
		assert.NotContains(t, log, "key~")
		assert.NotContains(t, log, "SUPERSECRET")
		assert.Equal(t, `pace: "api.test": wait 1s: rate limited: wait exceeds context deadline: context deadline exceeded`, waitErr.Error())
		assert.Contains(t, attemptsErr.Error(), `: "api.test": wait 1s: `)
		// Transport.Key returning "" falls back to the host, shown too.
		_, _, waitErr, _ = keyTrial(t, func(*http.Request) string { return "" })
		assert.Contains(t, waitErr.Error(), `pace: "api.test": `)
	})
}

// TestLongHostKeyBounded: a host too long for DNS is fingerprinted, so that
// no URL can make an error's text unbounded.
func TestLongHostKeyBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		host := strings.Repeat("h", 1<<20)
		srv := &testhttp.Server{Steps: []testhttp.Step{testhttp.Status(http.StatusTooManyRequests, "Retry-After", "1")}}
		tr := &Transport{Base: srv, Retry: retry.Policy{MaxAttempts: 2}}
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		req := newRequest(t, ctx, "GET", "http://api.test/", "")
		req.URL = &url.URL{Scheme: "http", Host: host, Path: "/"}
		resp, err := tr.RoundTrip(req)
		if resp != nil {
			resp.Body.Close()
		}
		require.ErrorIs(t, err, ErrWaitExceedsDeadline)
		assert.Less(t, len(err.Error()), 300, "%.300s", err)
		assert.Contains(t, err.Error(), fingerprint(host))
	})
}
