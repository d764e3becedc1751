package retryable

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/pacehttp/pace/retry"
)

// get sends a GET through c and returns the status, or 0 and the error.
func get(c *retryablehttp.Client, url string) (int, error) {
	resp, err := c.Get(url)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestCooldownHoldsEveryGoroutine: a 429 with Retry-After: 1 pauses the
// host for every goroutine and every retryablehttp.Client that share the
// pace.Transport: by the server's own log, nothing arrives within the
// second after the 429, neither the throttled request's retry nor the
// requests other goroutines start meanwhile through two clients.
func TestCooldownHoldsEveryGoroutine(t *testing.T) {
	srv := newServer(t, func(n int, h http.Header) int {
		if n == 1 {
			h.Set("Retry-After", "1")
			return http.StatusTooManyRequests
		}
		return http.StatusOK
	})
	throttled := make(chan struct{})
	var once sync.Once
	c1, base := newClient(t, 3, 10*time.Millisecond, 10*time.Millisecond)
	c2, _ := newClient(t, 3, 10*time.Millisecond, 10*time.Millisecond)
	tr := &pace.Transport{Retry: retry.Policy{MaxAttempts: 1}, Base: base, OnEvent: func(e pace.Event) {
		if e.Kind == pace.EventThrottle {
			once.Do(func() { close(throttled) })
		}
	}}
	var p Policy
	require.NoError(t, p.Install(c1, tr))
	require.NoError(t, p.Install(c2, tr))

	var wg sync.WaitGroup
	send := func(c *retryablehttp.Client) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, err := get(c, srv.URL)
			assert.NoError(t, err)
			assert.Equal(t, http.StatusOK, code)
		}()
	}
	send(c1)
	select {
	case <-throttled:
	case <-time.After(10 * time.Second):
		t.Fatal("no throttle within 10s")
	}
	for i := range 4 {
		send([]*retryablehttp.Client{c1, c2}[i%2])
	}
	wg.Wait()

	log := srv.log()
	require.Len(t, log, 6, "the 429, its retry and four other requests")
	for i, at := range log[1:] {
		assert.GreaterOrEqual(t, at.Sub(log[0]), time.Second, "request %d arrived during the cooldown", i+2)
	}
}

// TestRetryAfterHugeIsCapped: "Retry-After: 9999999999" (317 years) never
// parks the client and never becomes a hot loop. Installed, CheckRetry
// gives up at once and the client returns the 429 (one request sent).
// With retryablehttp's own CheckRetry, which retries every 429, Backoff
// waits MaxRetryAfter between attempts, by the server's log. retryablehttp's
// DefaultBackoff, for comparison, overflows on it and retries at once.
func TestRetryAfterHugeIsCapped(t *testing.T) {
	t.Parallel()
	huge := func(_ int, h http.Header) int {
		h.Set("Retry-After", "9999999999")
		return http.StatusTooManyRequests
	}
	t.Run("installed: the 429 comes back at once", func(t *testing.T) {
		t.Parallel()
		srv := newServer(t, huge)
		c, base := newClient(t, 3, 10*time.Millisecond, 10*time.Millisecond)
		require.NoError(t, (&Policy{MaxRetryAfter: time.Second}).Install(c, &pace.Transport{Retry: retry.Policy{MaxAttempts: 1}, MaxRetryAfter: time.Second, Base: base}))
		start := time.Now()
		code, err := get(c, srv.URL)
		require.NoError(t, err)
		assert.Equal(t, http.StatusTooManyRequests, code)
		assert.Len(t, srv.log(), 1, "requests sent")
		assert.Less(t, time.Since(start), 5*time.Second, "generous bound; no wait expected")
	})
	t.Run("Backoff under a CheckRetry that retries: waits MaxRetryAfter", func(t *testing.T) {
		t.Parallel()
		srv := newServer(t, huge)
		c, _ := newClient(t, 2, 10*time.Millisecond, 10*time.Millisecond)
		p := &Policy{MaxRetryAfter: 300 * time.Millisecond}
		c.Backoff = p.Backoff // CheckRetry stays retryablehttp.DefaultRetryPolicy
		start := time.Now()
		_, err := get(c, srv.URL)
		require.ErrorContains(t, err, "giving up after 3 attempt(s)")
		log := srv.log()
		require.Len(t, log, 3, "requests sent: RetryMax+1, no more")
		for i := 1; i < len(log); i++ {
			assert.GreaterOrEqual(t, log[i].Sub(log[i-1]), 300*time.Millisecond, "gap before attempt %d", i+1)
		}
		assert.Less(t, time.Since(start), 10*time.Second, "generous bound")
	})
	t.Run("for comparison, retryablehttp.DefaultBackoff loops hot", func(t *testing.T) {
		t.Parallel()
		srv := newServer(t, huge)
		c, _ := newClient(t, 2, 10*time.Millisecond, 10*time.Millisecond) // Backoff: retryablehttp.DefaultBackoff
		start := time.Now()
		_, err := get(c, srv.URL)
		require.ErrorContains(t, err, "giving up after 3 attempt(s)")
		assert.Len(t, srv.log(), 3)
		// 9999999999 s in nanoseconds overflows int64 to a negative wait:
		// the retries leave at once instead of after 317 years.
		assert.Less(t, time.Since(start), 2*time.Second)
	})
}

// httpDateForms are the three HTTP-date forms of RFC 9110 §5.6.7, as Go
// layouts that print the zone as GMT.
var httpDateForms = []struct{ name, layout string }{
	{"IMF-fixdate", http.TimeFormat},
	{"RFC 850", "Monday, 02-Jan-06 15:04:05 GMT"},
	{"asctime", time.ANSIC},
}

// TestRetryAfterDateForms: a 503 whose Retry-After names an instant 1 to
// 2 s ahead, in each of the three HTTP-date forms, is retried at or after
// that instant by the server's clock, by Backoff alone and by an installed
// client; the Fallback waits only 10 ms, so an unread date would show.
// go-retryablehttp v0.7.8's own parser reads IMF-fixdate only.
func TestRetryAfterDateForms(t *testing.T) {
	t.Parallel()
	for _, form := range httpDateForms {
		for _, installed := range []bool{false, true} {
			t.Run(form.name+" installed="+strconv.FormatBool(installed), func(t *testing.T) {
				t.Parallel()
				var mu sync.Mutex
				var instant time.Time
				srv := newServer(t, func(n int, h http.Header) int {
					if n == 1 {
						mu.Lock()
						instant = time.Now().UTC().Truncate(time.Second).Add(2 * time.Second)
						h.Set("Retry-After", instant.Format(form.layout))
						mu.Unlock()
						return http.StatusServiceUnavailable
					}
					return http.StatusOK
				})
				c, base := newClient(t, 2, 10*time.Millisecond, 10*time.Millisecond)
				p := &Policy{}
				if installed {
					require.NoError(t, p.Install(c, &pace.Transport{Retry: retry.Policy{MaxAttempts: 1}, Base: base}))
				} else {
					c.Backoff = p.Backoff
				}
				code, err := get(c, srv.URL)
				require.NoError(t, err)
				assert.Equal(t, http.StatusOK, code)
				log := srv.log()
				require.Len(t, log, 2)
				mu.Lock()
				defer mu.Unlock()
				assert.False(t, log[1].Before(instant), "retry at %v, before the instant %v", log[1], instant)
				assert.Less(t, log[1].Sub(instant), 3*time.Second, "generous bound")
			})
		}
	}
}

// TestRetryAfterMillis: retry-after-ms (OpenAI, Azure OpenAI) is honoured
// to the millisecond, where go-retryablehttp reads no such header.
func TestRetryAfterMillis(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(n int, h http.Header) int {
		if n == 1 {
			h.Set("Retry-After-Ms", "400")
			return http.StatusTooManyRequests
		}
		return http.StatusOK
	})
	c, _ := newClient(t, 2, 10*time.Millisecond, 10*time.Millisecond)
	c.Backoff = (&Policy{}).Backoff
	code, err := get(c, srv.URL)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code)
	log := srv.log()
	require.Len(t, log, 2)
	assert.GreaterOrEqual(t, log[1].Sub(log[0]), 400*time.Millisecond)
}

// TestLimitsApply: the pace.Transport's limit paces a retryablehttp.Client's
// requests from many goroutines: six requests at 20/s with no burst span at
// least five intervals (250 ms) by the server's log.
func TestLimitsApply(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(int, http.Header) int { return http.StatusOK })
	c, base := newClient(t, 0, 10*time.Millisecond, 10*time.Millisecond)
	require.NoError(t, (&Policy{}).Install(c, &pace.Transport{Retry: retry.Policy{MaxAttempts: 1}, Base: base,
		Limits: pace.Hosts{pace.DefaultHost: {Limit: pace.LeakyBucket(pace.PerSecond(20), pace.LeakyOptions{Queue: 10})}}}))
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			code, err := get(c, srv.URL)
			assert.NoError(t, err)
			assert.Equal(t, http.StatusOK, code)
		})
	}
	wg.Wait()
	log := srv.log()
	require.Len(t, log, 6)
	assert.GreaterOrEqual(t, log[5].Sub(log[0]), 250*time.Millisecond-5*time.Millisecond, "a 5 ms allowance for the loopback")
}

// TestBackoff: the wait is the server's delay, capped at MaxRetryAfter,
// else the Fallback's, capped too.
func TestBackoff(t *testing.T) {
	s := time.Second
	for _, tt := range []struct {
		name string
		p    Policy
		resp *http.Response
		want time.Duration
	}{
		{"no response: DefaultBackoff's exponential schedule", Policy{}, nil, 4 * s},
		{"429 with Retry-After seconds", Policy{}, testhttp.Response(429, "Retry-After", "7"), 7 * s},
		{"503 with x-ms-retry-after-ms", Policy{}, testhttp.Response(503, "X-Ms-Retry-After-Ms", "1500"), 1500 * time.Millisecond},
		{"500 with Retry-After: read on any error status", Policy{}, testhttp.Response(500, "Retry-After", "2"), 2 * s},
		{"huge Retry-After: the default cap", Policy{}, testhttp.Response(429, "Retry-After", "9999999999"), pace.DefaultMaxRetryAfter},
		{"huge Retry-After: MaxRetryAfter", Policy{MaxRetryAfter: 3 * s}, testhttp.Response(429, "Retry-After", "9999999999"), 3 * s},
		{"a malformed Retry-After: the schedule", Policy{}, testhttp.Response(429, "Retry-After", "-5"), 4 * s},
		{"a 200's Retry-After is not a delay", Policy{}, testhttp.Response(200, "Retry-After", "9"), 4 * s},
		{"a Fallback", Policy{Fallback: func(_, _ time.Duration, n int, _ *http.Response) time.Duration { return time.Duration(n) * s }}, nil, 2 * s},
		{"a Fallback above the cap", Policy{MaxRetryAfter: s, Fallback: func(time.Duration, time.Duration, int, *http.Response) time.Duration { return time.Hour }}, nil, s},
		{"a negative Fallback", Policy{Fallback: func(time.Duration, time.Duration, int, *http.Response) time.Duration { return -s }}, nil, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.p.Backoff(time.Second, 30*time.Second, 2, tt.resp))
		})
	}
}

// TestCheckRetry: the cases CheckRetry decides itself, and Check otherwise.
func TestCheckRetry(t *testing.T) {
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	errNo := errors.New("from Check")
	for _, tt := range []struct {
		name      string
		p         Policy
		ctx       context.Context
		resp      *http.Response
		err       error
		wantRetry bool
		wantErr   error
	}{
		{"context ended", Policy{}, cancelled, testhttp.Response(503), nil, false, context.Canceled},
		{"invalid configuration", Policy{}, t.Context(), nil, &pace.ConfigError{Field: "MaxWait"}, false, pace.ErrInvalidConfig},
		{"a wait past the deadline", Policy{}, t.Context(), nil, &pace.WaitError{Err: pace.ErrWaitExceedsDeadline}, false, pace.ErrWaitExceedsDeadline},
		{"a delay above the cap: the response, no retry", Policy{}, t.Context(), testhttp.Response(429, "Retry-After", "3600"), nil, false, nil},
		{"a delay above MaxRetryAfter", Policy{MaxRetryAfter: time.Minute}, t.Context(), testhttp.Response(503, "Retry-After", "61"), nil, false, nil},
		{"a delay within the cap: DefaultRetryPolicy retries", Policy{}, t.Context(), testhttp.Response(429, "Retry-After", "3"), nil, true, nil},
		{"a throttled key's probe: DefaultRetryPolicy retries", Policy{}, t.Context(), nil, &pace.AttemptsError{Attempts: 1, Err: pace.ErrThrottled}, true, nil},
		{"a 404: DefaultRetryPolicy does not", Policy{}, t.Context(), testhttp.Response(404), nil, false, nil},
		{"Check decides the rest", Policy{Check: func(context.Context, *http.Response, error) (bool, error) { return false, errNo }},
			t.Context(), testhttp.Response(500), nil, false, errNo},
	} {
		t.Run(tt.name, func(t *testing.T) {
			retry, err := tt.p.CheckRetry(tt.ctx, tt.resp, tt.err)
			assert.Equal(t, tt.wantRetry, retry)
			if tt.wantErr == nil {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, tt.wantErr)
			}
		})
	}
}

// TestInstall: Install sets the client's policy and transport and keeps
// its HTTPClient's other settings; it refuses, changing nothing, a
// Transport that would retry on its own or turn responses into errors, an
// invalid one, and nil arguments.
func TestInstall(t *testing.T) {
	c, _ := newClient(t, 1, time.Millisecond, time.Millisecond)
	c.HTTPClient.Timeout = 7 * time.Second
	old := c.HTTPClient
	tr := &pace.Transport{Retry: retry.Policy{MaxAttempts: 1}, Limits: pace.Hosts{"api.example": {MaxAttempts: 1}, "*": {}}}
	require.NoError(t, (&Policy{}).Install(c, tr))
	assert.Same(t, tr, c.HTTPClient.Transport)
	assert.Equal(t, 7*time.Second, c.HTTPClient.Timeout)
	assert.NotSame(t, old, c.HTTPClient, "the client's own http.Client is not modified")
	assert.NotSame(t, tr, old.Transport)

	for _, tt := range []struct {
		name  string
		p     Policy
		c     *retryablehttp.Client
		t     *pace.Transport
		field string
	}{
		{"MaxAttempts 0 (3 attempts)", Policy{}, retryablehttp.NewClient(), &pace.Transport{}, "Retry.MaxAttempts"},
		{"ErrorOnGiveUp", Policy{}, retryablehttp.NewClient(), &pace.Transport{Retry: retry.Policy{MaxAttempts: 1}, ErrorOnGiveUp: true}, "ErrorOnGiveUp"},
		{"a host's MaxAttempts above 1", Policy{}, retryablehttp.NewClient(),
			&pace.Transport{Retry: retry.Policy{MaxAttempts: 1}, Limits: pace.Hosts{"api.example": {}, "b.example": {MaxAttempts: 4}}}, `Limits["b.example"].MaxAttempts`},
		{"the default host's MaxAttempts above 1", Policy{}, retryablehttp.NewClient(),
			&pace.Transport{Retry: retry.Policy{MaxAttempts: 1}, Limits: pace.Hosts{"*": {MaxAttempts: 2}}}, `Limits["*"].MaxAttempts`},
		{"an invalid host entry", Policy{}, retryablehttp.NewClient(),
			&pace.Transport{Retry: retry.Policy{MaxAttempts: 1}, Limits: pace.Hosts{"api.example": {MaxAttempts: -2}}}, `Limits["api.example"].MaxAttempts`},
		{"an invalid Transport", Policy{}, retryablehttp.NewClient(), &pace.Transport{Retry: retry.Policy{MaxAttempts: 1}, MaxWait: -1}, "MaxWait"},
		{"a negative MaxRetryAfter", Policy{MaxRetryAfter: -1}, retryablehttp.NewClient(), &pace.Transport{Retry: retry.Policy{MaxAttempts: 1}}, "MaxRetryAfter"},
		{"no client", Policy{}, nil, &pace.Transport{Retry: retry.Policy{MaxAttempts: 1}}, "Client"},
		{"no transport", Policy{}, retryablehttp.NewClient(), nil, "Transport"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var before *http.Client
			if tt.c != nil {
				before = tt.c.HTTPClient
			}
			err := tt.p.Install(tt.c, tt.t)
			require.ErrorIs(t, err, pace.ErrInvalidConfig)
			var ce *pace.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tt.field, ce.Field)
			if tt.c != nil {
				assert.Same(t, before, tt.c.HTTPClient, "client changed")
			}
		})
	}
}
