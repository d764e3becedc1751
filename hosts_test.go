package pace

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/pacehttp/pace/retry"
)

// TestHostsChooseTheLimit: each host gets its listed Limit, matched as a
// URL compares hosts (case, a trailing dot and ports 80 and 443, whatever
// the scheme, do not count; another port does); "*" covers the rest; the
// zero Limit exempts a host.
func TestHostsChooseTheLimit(t *testing.T) {
	tests := []struct {
		url     string
		wantGap time.Duration
	}{
		{"http://api.test/", 100 * time.Millisecond},
		{"http://API.Test/", 100 * time.Millisecond},
		{"http://api.test:80/", 100 * time.Millisecond},   // http's default port
		{"https://api.test:443/", 100 * time.Millisecond}, // https's default port
		{"http://api.test./", 100 * time.Millisecond},     // a fully qualified name
		{"https://api.test:80/", 100 * time.Millisecond},  // 80 and 443 never count: the key cannot know the scheme
		{"http://api.test:443/", 100 * time.Millisecond},
		{"http://api.test:/", 100 * time.Millisecond}, // an empty port is none (RFC 3986 §3.2.3, §6.2.3)
		{"http://api.test:8443/", time.Second},        // port kept: not "api.test"
		{"http://other.test/", time.Second},
		{"http://free.test/", 0},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &testhttp.Server{}
				tr := &Transport{Base: srv, Limits: Hosts{
					"Api.Test":  {Limit: LeakyBucket(Every(100*time.Millisecond), LeakyOptions{Queue: 10})},
					"*":         {Limit: TokenBucket(PerSecond(1), 1)},
					"free.test": {},
				}}
				for range 3 {
					roundTrip(t, tr, "GET", tt.url)
				}
				for i, g := range gaps(srv.Requests()) {
					if g != tt.wantGap {
						t.Errorf("gap %d = %v, want %v", i+1, g, tt.wantGap)
					}
				}
			})
		})
	}
}

// TestHostsStatePerKey: with a Key function, the host's Limit applies to
// each key separately.
func TestHostsStatePerKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &testhttp.Server{}
		tr := &Transport{
			Base:   srv,
			Limits: Hosts{"api.test": {Limit: LeakyBucket(Every(time.Second), LeakyOptions{Queue: 10})}},
			Key:    func(r *http.Request) string { return r.Header.Get("X-Api-Key") },
		}
		start := time.Now()
		var mu sync.Mutex
		at := map[string][]time.Duration{}
		var wg sync.WaitGroup
		for _, key := range []string{"a", "a", "b", "b"} {
			wg.Go(func() {
				req := newRequest(t, t.Context(), "GET", "http://api.test/", "")
				req.Header.Set("X-Api-Key", key)
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				mu.Lock()
				at[key] = append(at[key], time.Since(start))
				mu.Unlock()
			})
		}
		wg.Wait()
		want := "[0s 1s]"
		if fmt.Sprint(at["a"]) != want || fmt.Sprint(at["b"]) != want {
			t.Errorf("key a sent at %v, key b at %v; want %s each", at["a"], at["b"], want)
		}
	})
}

// TestHostsRefusals is issue item 2: a full leaky-bucket queue or a wait
// beyond MaxWait fails at once with an error matching ErrRateLimited,
// nothing sent; a cancelled wait returns promptly and gives its slot back.
func TestHostsRefusals(t *testing.T) {
	t.Run("queue full", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := &testhttp.Server{}
			tr := &Transport{Base: srv, Limits: Hosts{"api.test": {Limit: LeakyBucket(Every(time.Second), LeakyOptions{Queue: 1})}}}
			roundTrip(t, tr, "GET", "http://api.test/") // takes the slot at 0
			done := make(chan struct{})
			go func() { // waits in the queue for the slot at 1s
				defer close(done)
				roundTrip(t, tr, "GET", "http://api.test/")
			}()
			synctest.Wait()
			start := time.Now()
			_, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "http://api.test/", ""))
			if !errors.Is(err, ErrQueueFull) || !errors.Is(err, ErrRateLimited) || time.Since(start) != 0 {
				t.Errorf("third request: %v after %v, want ErrQueueFull at once", err, time.Since(start))
			}
			<-done
			if srv.Count() != 2 {
				t.Errorf("%d sent, want 2", srv.Count())
			}
		})
	})
	t.Run("beyond MaxWait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := &testhttp.Server{}
			tr := &Transport{Base: srv, MaxWait: 5 * time.Second, Limits: Hosts{"*": {Limit: TokenBucket(PerMinute(1), 1)}}}
			roundTrip(t, tr, "GET", "http://api.test/")
			_, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "http://api.test/", ""))
			var we *WaitError
			if !errors.Is(err, ErrWaitTooLong) || !errors.As(err, &we) || we.Delay != time.Minute || srv.Count() != 1 {
				t.Errorf("err %v after %d sent; want ErrWaitTooLong carrying 1m, 1 sent", err, srv.Count())
			}
		})
	})
	t.Run("cancelled wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := &testhttp.Server{}
			tr := &Transport{Base: srv, Limits: Hosts{"*": {Limit: LeakyBucket(Every(time.Second), LeakyOptions{Queue: 10})}}}
			roundTrip(t, tr, "GET", "http://api.test/")
			ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
			time.AfterFunc(300*time.Millisecond, cancel)
			start := time.Now()
			_, err := tr.RoundTrip(newRequest(t, ctx, "GET", "http://api.test/", ""))
			if !errors.Is(err, context.Canceled) || time.Since(start) != 300*time.Millisecond {
				t.Fatalf("err %v after %v, want context.Canceled after 300ms", err, time.Since(start))
			}
			// The slot at 1s was given back: the next request takes it.
			roundTrip(t, tr, "GET", "http://api.test/")
			if at := srv.Requests()[1].At.Sub(start); at != time.Second {
				t.Errorf("next request sent %v after the cancelled one started, want at its 1s slot", at)
			}
		})
	})
}

// TestHostsRejectKeysThatCannotMatch: a key no URL.Host can equal is a
// *ConfigError naming Limits["key"], from Validate and from RoundTrip,
// nothing sent; upper-case letters are lower-cased, not rejected.
func TestHostsRejectKeysThatCannotMatch(t *testing.T) {
	lim := TokenBucket(PerSecond(1), 1)
	tests := []struct {
		key     string
		wantErr bool
	}{
		{"https://api.example", true},
		{"api.example/v1", true},
		{"api.example?x=1", true},
		{"api.example#top", true},
		{"user@api.example", true},
		{"api example", true},
		{" api.example", true},
		{"api.example\t", true},
		{"api.example\n", true},
		{"*.example", true},
		{"api.*", true},
		{"", true},
		{"API.Example", false},
		{"api.example:8443", false},
		{"[::1]:8080", false},
		{"*", false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.key), func(t *testing.T) {
			tr := &Transport{Base: &testhttp.Server{}, Limits: Hosts{tt.key: {Limit: lim}}}
			err := tr.Validate()
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != hostField(tt.key) {
				t.Fatalf("Validate() = %v, want a *ConfigError for %s", err, hostField(tt.key))
			}
			if _, rerr := tr.RoundTrip(newRequest(t, t.Context(), "GET", "http://api.example/", "")); !errors.Is(rerr, ErrInvalidConfig) {
				t.Errorf("RoundTrip = %v, want ErrInvalidConfig", rerr)
			}
		})
	}
}

// TestHostsSameHostTwice: two keys that a URL would take for the same host
// are refused, naming both.
func TestHostsSameHostTwice(t *testing.T) {
	for _, pair := range [][2]string{
		{"api.test", "API.test"}, {"api.test", "api.test."}, {"api.test", "api.test:443"}, {"api.test:80", "api.test."}, {"api.test", "api.test:"},
	} {
		tr := &Transport{Limits: Hosts{pair[0]: {Limit: TokenBucket(PerSecond(1), 1)}, pair[1]: {Limit: TokenBucket(PerSecond(2), 1)}}}
		err := tr.Validate()
		var ce *ConfigError
		if !errors.As(err, &ce) || !errors.Is(err, ErrInvalidConfig) {
			t.Fatalf("Hosts %q: Validate() = %v, want a *ConfigError", pair, err)
		}
		if msg := err.Error(); !strings.Contains(msg, "the same host as") {
			t.Errorf("Hosts %q: %q does not say the hosts are the same", pair, msg)
		}
	}
	if err := (&Transport{Limits: Hosts{"api.test": {Limit: TokenBucket(PerSecond(1), 1)}, "api.test:8443": {Limit: TokenBucket(PerSecond(1), 1)}}}).Validate(); err != nil {
		t.Errorf("another port is another host: Validate() = %v", err)
	}
}

// TestHostsRetryPolicy: a Host's MaxAttempts and Statuses replace the
// Transport's for that host only, zero meaning the Transport's: a payment
// API tried once, a flaky data API five times on 500 (which the payment API
// does not retry), and every other host the Transport's 3 attempts on its
// default statuses.
func TestHostsRetryPolicy(t *testing.T) {
	tests := []struct {
		url      string
		status   int
		attempts int
	}{
		{"http://pay.test/", 503, 1},  // MaxAttempts 1
		{"http://data.test/", 500, 5}, // MaxAttempts 5, Statuses [500]
		{"http://data.test/", 503, 1}, // 503 not in the host's Statuses
		{"http://other.test/", 503, 3},
		{"http://other.test/", 500, 3}, // the Transport's default statuses
		{"http://quiet.test/", 503, 3}, // listed with only a Limit: the Transport's
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %d", tt.url, tt.status), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var n atomic.Int32
				tr := &Transport{
					Base: testhttp.RoundTripperFunc(func(*http.Request) (*http.Response, error) {
						n.Add(1)
						return testhttp.Response(tt.status), nil
					}),
					Retry: retry.Policy{MaxAttempts: 3},
					Limits: Hosts{
						"pay.test":   {MaxAttempts: 1},
						"data.test":  {MaxAttempts: 5, Statuses: []int{500}},
						"quiet.test": {Limit: TokenBucket(PerSecond(100), 10)},
					},
				}
				code := roundTrip(t, tr, "GET", tt.url)
				if code != tt.status || int(n.Load()) != tt.attempts {
					t.Errorf("status %d after %d attempts, want %d after %d", code, n.Load(), tt.status, tt.attempts)
				}
			})
		})
	}
}

// TestHostsRetryPolicyInvalid: a Host's negative MaxAttempts or non-error
// status is refused, naming the entry's setting.
func TestHostsRetryPolicyInvalid(t *testing.T) {
	for _, tt := range []struct {
		hosts Hosts
		field string
	}{
		{Hosts{"api.test": {MaxAttempts: -1}}, `Limits["api.test"].MaxAttempts`},
		{Hosts{"api.test": {Statuses: []int{200}}}, `Limits["api.test"].Statuses`},
		{Hosts{"*": {Statuses: []int{503, 302, 500}}}, `Limits["*"].Statuses`},
	} {
		err := (&Transport{Limits: tt.hosts}).Validate()
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != tt.field || !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("Hosts %v: Validate() = %v, want a *ConfigError naming %s", tt.hosts, err, tt.field)
		}
	}
}

// TestHostsKeysAsURLHostsHoldThem: the keys of a new user's trial that no
// URL.Host can equal are refused, each with its reason, and the forms a
// URL takes for one host meet their key: an IPv6 literal however it is
// written (RFC 5952), an internationalized name in Unicode or punycode, and
// "api.example:443" for an http URL to port 443.
func TestHostsKeysAsURLHostsHoldThem(t *testing.T) {
	lim := TokenBucket(PerSecond(1), 1)
	for key, reason := range map[string]string{
		"[::1":              "closing ']'",
		"api.example:abc":   "not a decimal number",
		"api.example:9999":  "",
		"api.example:99999": "above 65535",
		"[fe80::1%25eth0]":  "unescaped",
		"::1":               "in brackets",
	} {
		err := (&Transport{Limits: Hosts{key: {Limit: lim}}}).Validate()
		if reason == "" {
			assert.NoError(t, err, key)
			continue
		}
		var ce *ConfigError
		if assert.ErrorAs(t, err, &ce, key) {
			assert.Equal(t, hostField(key), ce.Field)
			assert.Contains(t, ce.Reason, reason, key)
			assert.ErrorIs(t, err, ErrInvalidConfig)
		}
	}
	for _, pair := range [][2]string{{"[::1]", "[0:0::1]"}, {"äpi.example", "xn--pi-uia.example"}, {"api.example:80", "api.example:443"}} {
		err := (&Transport{Limits: Hosts{pair[0]: {Limit: lim}, pair[1]: {Limit: lim}}}).Validate()
		assert.ErrorContains(t, err, "the same host as", "%q", pair)
	}

	matches := []struct{ key, url string }{
		{"[::1]", "http://[0:0::1]/"},
		{"[0:0::1]", "http://[::1]/"},
		{"[fe80::1]", "http://[FE80::1]/"},
		{"[fe80::1%eth0]", "http://[fe80::1%25eth0]/"},
		{"äpi.example", "http://ÄPI.example/"},
		{"äpi.example", "http://xn--pi-uia.example/"},
		{"xn--pi-uia.example", "https://äpi.example/"},
		{"api.example:443", "http://api.example:443/"},
		{"api.example:443", "https://api.example/"},
		{"api.example", "http://api.example:443/"},
		{"api.example:8443", "https://API.example.:8443/"},
	}
	for _, m := range matches {
		synctest.Test(t, func(t *testing.T) {
			srv := &testhttp.Server{}
			tr := &Transport{Base: srv, MaxWait: time.Millisecond, Limits: Hosts{
				m.key: {Limit: LeakyBucket(Every(time.Hour), LeakyOptions{})},
			}}
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", m.url, ""))
			require.NoError(t, err, "%q %s: first", m.key, m.url)
			resp.Body.Close()
			_, err = tr.RoundTrip(newRequest(t, t.Context(), "GET", m.url, ""))
			assert.ErrorIs(t, err, ErrWaitTooLong, "%q %s: the key's limit applies", m.key, m.url)
		})
	}
	for _, m := range []struct{ key, url string }{
		{"api.example:8443", "https://api.example/"},
		{"api.example", "https://api.example:8443/"},
		{"äpi.example", "http://xn--pi-yja.example/"}, // that is "ñpi"
		{"[::1]", "http://[::2]/"},
	} {
		synctest.Test(t, func(t *testing.T) {
			tr := &Transport{Base: &testhttp.Server{}, MaxWait: time.Millisecond, Limits: Hosts{
				m.key: {Limit: LeakyBucket(Every(time.Hour), LeakyOptions{})},
			}}
			for range 2 {
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", m.url, ""))
				require.NoError(t, err, "%q %s: not the key's host, not paced", m.key, m.url)
				resp.Body.Close()
			}
		})
	}
}

// TestHostsPortLeadingZeros: net/http dials "api.test:08443" as port 8443,
// so a key "api.test:8443" paces it; a port written with leading zeros
// cannot slip past its host's limit.
func TestHostsPortLeadingZeros(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &testhttp.Server{}
		tr := &Transport{Base: srv, Limits: Hosts{"api.test:8443": {Limit: TokenBucket(PerSecond(1), 1)}}}
		for _, u := range []string{"http://api.test:8443/", "http://api.test:08443/", "http://api.test:008443/"} {
			assert.Equal(t, http.StatusOK, roundTrip(t, tr, http.MethodGet, u))
		}
		assert.Equal(t, []time.Duration{time.Second, time.Second}, gaps(srv.Requests()), "one limit for every spelling of the port")
		_, err := (&Transport{Limits: Hosts{"api.test": {}, "api.test:080": {}}}).compile(false)
		assert.ErrorIs(t, err, ErrInvalidConfig, "two keys naming one host")
	})
}
