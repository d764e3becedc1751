package pace

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace/internal/testhttp"
)

// TestPortMismatchReported: Hosts{"127.0.0.1": ...} against a server on
// 127.0.0.1:PORT paces nothing, since a port other than 80 and 443 counts
// (see Hosts). The first request reports it, once for the key, as an
// EventPortMismatch and a warn-level log record; Validate, given the
// server's URL, returns an error naming the key and the host:port.
func TestPortMismatchReported(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	hostport := strings.TrimPrefix(srv.URL, "http://")
	for _, tt := range []struct {
		name  string
		hosts Hosts
	}{
		{"no default", Hosts{"127.0.0.1": {Limit: TokenBucket(PerSecond(2), 1)}}},
		{"with a default", Hosts{"127.0.0.1": {Limit: TokenBucket(PerSecond(2), 1)}, DefaultHost: {}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var events []Event
			var logs bytes.Buffer
			tr := &Transport{
				Limits: tt.hosts,
				OnEvent: func(e Event) {
					mu.Lock()
					events = append(events, e)
					mu.Unlock()
				},
				Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
			}
			defer tr.CloseIdleConnections()
			var wg sync.WaitGroup
			for range 10 {
				wg.Go(func() {
					code, err := get(t, tr, t.Context(), srv.URL+"/items")
					assert.NoError(t, err)
					assert.Equal(t, http.StatusOK, code)
				})
			}
			wg.Wait()

			require.Len(t, events, 1, "one event for the key")
			e := events[0]
			assert.Equal(t, EventPortMismatch, e.Kind)
			assert.Equal(t, hostport, e.Key)
			var ce *ConfigError
			require.ErrorAs(t, e.Err, &ce)
			assert.Equal(t, `Limits["127.0.0.1"]`, ce.Field)
			assert.Equal(t, hostport, ce.Value)
			assert.ErrorIs(t, e.Err, ErrInvalidConfig)

			assert.Equal(t, 1, strings.Count(logs.String(), "\n"), "one log record: %s", logs.String())
			assert.Contains(t, logs.String(), "level=WARN")
			assert.Contains(t, logs.String(), "port-mismatch")
			assert.Contains(t, logs.String(), `Limits[\"127.0.0.1\"]`)
			assert.Contains(t, logs.String(), hostport)

			err := tr.Validate("http://127.0.0.1/ok", srv.URL+"/items?token=secret")
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, `Limits["127.0.0.1"]`, ce.Field)
			assert.Equal(t, hostport, ce.Value)
			assert.Contains(t, err.Error(), `Limits["127.0.0.1"]`)
			assert.Contains(t, err.Error(), hostport)
			assert.NotContains(t, err.Error(), "secret")
		})
	}
}

// TestValidateURLs: Validate with URLs accepts those a key lists, those of
// hosts no key names at all, and those of a key's host on ports 80 and
// 443; it refuses a URL that is no absolute URL and one whose port differs
// from every key of its host's name, naming the first such key.
func TestValidateURLs(t *testing.T) {
	lim := TokenBucket(PerSecond(2), 1)
	tr := &Transport{Limits: Hosts{"api.example:8443": {Limit: lim}, "api.example:9000": {Limit: lim}, "[::1]:8080": {Limit: lim}}}
	require.NoError(t, tr.Validate())
	require.NoError(t, tr.Validate("https://api.example:8443/v1", "https://API.example.:9000/", "http://other.example:8443/",
		"http://[::1]:8080/x", "http://[0:0::1]:8080/"))
	for _, tt := range []struct {
		url, field string
		value      any
	}{
		{"https://api.example/v1", `Limits["api.example:8443"]`, "api.example"},
		{"http://api.example:80/", `Limits["api.example:8443"]`, "api.example"},
		{"https://api.example:8444/", `Limits["api.example:8443"]`, "api.example:8444"},
		{"http://[::1]/", `Limits["[::1]:8080"]`, "[::1]"},
		{"/relative", "urls[0]", nil},
		{"http://%zz/", "urls[0]", nil},
	} {
		err := tr.Validate(tt.url)
		var ce *ConfigError
		if assert.ErrorAs(t, err, &ce, tt.url) {
			assert.Equal(t, tt.field, ce.Field, tt.url)
			assert.Equal(t, tt.value, ce.Value, tt.url)
		}
	}
	err := (&Transport{Limits: Hosts{"": {}}}).Validate("https://api.example/")
	assert.True(t, errors.Is(err, ErrInvalidConfig), "a bad setting first: %v", err)
	assert.NoError(t, (&Transport{}).Validate("https://api.example/"), "no Limits: nothing to mismatch")
}

// TestPortMismatchOncePerKey: two keys name the host of a request on a
// third port; each is reported once, however many requests follow. A
// request a key lists, or to a host no key names, reports nothing.
func TestPortMismatchOncePerKey(t *testing.T) {
	lim := TokenBucket(PerSecond(1000), 10)
	var fields []string
	tr := &Transport{
		Base:   &testhttp.Server{},
		Limits: Hosts{"api.example:8443": {Limit: lim}, "api.example:9000": {Limit: lim}},
		OnEvent: func(e Event) {
			var ce *ConfigError
			if assert.Equal(t, EventPortMismatch, e.Kind) && assert.ErrorAs(t, e.Err, &ce) {
				fields = append(fields, ce.Field)
			}
		},
	}
	for _, u := range []string{"https://api.example:8443/", "https://other.example/", "https://api.example:8444/",
		"https://api.example:8444/", "https://api.example/", "https://api.example:9000/"} {
		code, err := get(t, tr, t.Context(), u)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code)
	}
	assert.Equal(t, []string{`Limits["api.example:8443"]`, `Limits["api.example:9000"]`}, fields)
}
