package pace

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/pacehttp/pace/retry"
	"github.com/pacehttp/pace/throttle"
)

// newRequest returns a request with ctx; body "" means none.
func newRequest(t *testing.T, ctx context.Context, method, url, body string) *http.Request {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// constBackOff returns a NewBackOff of a constant interval.
func constBackOff(d time.Duration) func() backoff.BackOff {
	return func() backoff.BackOff { return backoff.NewConstantBackOff(d) }
}

// spacer is a test Limiter that spaces requests of each key by every, with
// no burst; it honours maxWait, the deadline and cancellation like Keyed.
type spacer struct {
	every time.Duration
	mu    sync.Mutex
	next  map[string]time.Time
	waits atomic.Int64
}

func (*spacer) Depart(throttle.Permit, time.Time)        {}
func (*spacer) Settle(throttle.Permit, throttle.Outcome) {}

func (s *spacer) Wait(ctx context.Context, key string, maxWait time.Duration) (throttle.Permit, error) {
	d, err := s.wait(ctx, key, maxWait)
	return throttle.Permit{Key: key, Delay: d}, err
}

func (s *spacer) wait(ctx context.Context, key string, maxWait time.Duration) (time.Duration, error) {
	s.waits.Add(1)
	now := time.Now()
	s.mu.Lock()
	if s.next == nil {
		s.next = make(map[string]time.Time)
	}
	at := now
	if n := s.next[key]; n.After(now) {
		at = n
	}
	d := at.Sub(now)
	if maxWait > 0 && d > maxWait {
		s.mu.Unlock()
		return 0, &WaitError{Key: key, Delay: d, Err: ErrWaitTooLong}
	}
	s.next[key] = at.Add(s.every)
	s.mu.Unlock()
	return d, sleepReserved(ctx, key, d, func() {
		s.mu.Lock()
		if s.next[key].Equal(at.Add(s.every)) {
			s.next[key] = at
		}
		s.mu.Unlock()
	})
}

func TestTransportZeroValueSendsOnce(t *testing.T) {
	srv := &testhttp.Server{}
	tr := &Transport{Base: srv}
	resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "http://api.test/x", ""))
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || srv.Count() != 1 {
		t.Errorf("status %d after %d requests, want 200 after 1", resp.StatusCode, srv.Count())
	}
}

func TestTransportStatusRetries(t *testing.T) {
	tests := []struct {
		code      int
		wantSends int
	}{
		{408, 3}, {429, 3}, {500, 3}, {502, 3}, {503, 3}, {504, 3},
		{400, 1}, {401, 1}, {403, 1}, {404, 1}, {405, 1}, {409, 1}, {422, 1},
		{501, 1}, {505, 1}, {506, 1}, {510, 1}, {511, 1},
		{200, 1}, {201, 1}, {204, 1}, {301, 1}, {304, 1},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.code), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &testhttp.Server{Steps: []testhttp.Step{testhttp.Status(tt.code)}}
				tr := &Transport{Base: srv}
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "http://api.test/x", ""))
				if err != nil {
					t.Fatalf("RoundTrip: %v", err)
				}
				defer resp.Body.Close()
				if srv.Count() != tt.wantSends {
					t.Errorf("%d: %d requests sent, want %d", tt.code, srv.Count(), tt.wantSends)
				}
				// The last response comes back unchanged, body unread;
				// every earlier one was closed.
				rs := srv.Responses()
				if resp != rs[len(rs)-1] {
					t.Errorf("returned response is not the server's last one")
				}
				if b := resp.Body.(*testhttp.Body); b.Closed() || b.BytesRead() != 0 {
					t.Errorf("returned body closed=%v read=%d, want untouched", b.Closed(), b.BytesRead())
				}
				for i, r := range rs[:len(rs)-1] {
					if !r.Body.(*testhttp.Body).Closed() {
						t.Errorf("discarded response %d not closed", i+1)
					}
				}
			})
		})
	}
}

func TestTransportErrorAttempts(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	tests := []struct {
		name      string
		err       error
		method    string
		wantSends int
	}{
		{"reset GET retried", reset, "GET", 3},
		{"unexpected EOF PUT retried", io.ErrUnexpectedEOF, "PUT", 3},
		{"reset POST not retried", reset, "POST", 1},
		{"canceled not retried", context.Canceled, "GET", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &testhttp.Server{Steps: []testhttp.Step{testhttp.Fail(tt.err)}}
				tr := &Transport{Base: srv}
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), tt.method, "http://api.test/x", ""))
				if resp != nil {
					t.Fatalf("got a response and error %v", err)
				}
				var ae *AttemptsError
				if !errors.As(err, &ae) || ae.Attempts != tt.wantSends || !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want *AttemptsError{Attempts: %d} wrapping %v", err, tt.wantSends, tt.err)
				}
				if srv.Count() != tt.wantSends {
					t.Errorf("%d requests sent, want %d", srv.Count(), tt.wantSends)
				}
			})
		})
	}
}

func TestTransportNeverResponseAndError(t *testing.T) {
	body := testhttp.NewBody("x")
	base := testhttp.RoundTripperFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Body: body, Header: http.Header{}}, io.ErrUnexpectedEOF
	})
	tr := &Transport{Base: base, Retry: retry.Policy{MaxAttempts: 1}}
	resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "http://api.test/x", ""))
	if resp != nil || err == nil {
		t.Fatalf("RoundTrip = %v, %v; want nil response and an error", resp, err)
	}
	if !body.Closed() {
		t.Error("the response a broken Base returned with an error was not closed")
	}
}

// TestTransportContract checks the RoundTripper contract on every path:
// the caller's request is never modified, and its body is always closed.
func TestTransportContract(t *testing.T) {
	refuse := limiterFunc(func(ctx context.Context, key string, maxWait time.Duration) error {
		return &WaitError{Key: key, Delay: time.Hour, Err: ErrWaitTooLong}
	})
	tests := []struct {
		name    string
		tr      func(base http.RoundTripper) *Transport
		steps   []testhttp.Step
		method  string
		hdr     string // Idempotency-Key, if any
		wantErr bool
	}{
		{"success", func(b http.RoundTripper) *Transport { return &Transport{Base: b} }, nil, "POST", "", false},
		{"retried then success", func(b http.RoundTripper) *Transport { return &Transport{Base: b} },
			[]testhttp.Step{testhttp.Status(503), testhttp.Status(503), testhttp.Status(200)}, "PUT", "", false},
		{"retried POST with key", func(b http.RoundTripper) *Transport { return &Transport{Base: b} },
			[]testhttp.Step{testhttp.Status(502), testhttp.Status(200)}, "POST", "k-1", false},
		{"attempts out on error", func(b http.RoundTripper) *Transport { return &Transport{Base: b} },
			[]testhttp.Step{testhttp.Fail(io.ErrUnexpectedEOF)}, "PUT", "", true},
		{"limiter refuses", func(b http.RoundTripper) *Transport { return &Transport{Base: b, Limiter: refuse} }, nil, "PUT", "", true},
		{"invalid config", func(b http.RoundTripper) *Transport { return &Transport{Base: b, Retry: retry.Policy{MaxAttempts: -1}} }, nil, "PUT", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &testhttp.Server{Steps: tt.steps}
				tr := tt.tr(srv)
				body := testhttp.NewOneShot("hello world")
				req := newRequest(t, t.Context(), tt.method, "http://Api.Test/x?q=1", "")
				req.Body = body
				req.ContentLength = 11
				req.Header.Set("Authorization", "Bearer s3cret")
				req.Header.Add("Accept", "a")
				req.Header.Add("Accept", "b")
				if tt.hdr != "" {
					req.Header.Set("Idempotency-Key", tt.hdr)
				}
				before := testhttp.Snap(req)
				resp, err := tr.RoundTrip(req)
				if (err != nil) != tt.wantErr || (resp != nil) == (err != nil) {
					t.Fatalf("RoundTrip = %v, %v; want error %v and exactly one of the two", resp, err, tt.wantErr)
				}
				if resp != nil {
					resp.Body.Close()
					if resp.Request != req {
						t.Error("resp.Request is not the caller's request")
					}
				}
				if d := before.Diff(req); d != "" {
					t.Errorf("request modified: %s", d)
				}
				if !body.Closed() {
					t.Error("request body not closed")
				}
				for i, r := range srv.Requests() {
					if string(r.Body) != "hello world" || r.ContentLength != 11 {
						t.Errorf("attempt %d sent body %q (Content-Length %d), want the 11 bytes", i+1, r.Body, r.ContentLength)
					}
				}
			})
		})
	}
}

type limiterFunc func(ctx context.Context, key string, maxWait time.Duration) error

func (f limiterFunc) Wait(ctx context.Context, key string, maxWait time.Duration) (throttle.Permit, error) {
	return throttle.Permit{Key: key}, f(ctx, key, maxWait)
}
func (limiterFunc) Depart(throttle.Permit, time.Time)        {}
func (limiterFunc) Settle(throttle.Permit, throttle.Outcome) {}

func TestTransportValidate(t *testing.T) {
	nop := limiterFunc(func(context.Context, string, time.Duration) error { return nil })
	tests := []struct {
		name  string
		tr    *Transport
		field string // "" means valid
	}{
		{"zero", &Transport{}, ""},
		{"negative MaxWait", &Transport{MaxWait: -1}, "MaxWait"},
		{"negative MaxAttempts", &Transport{Retry: retry.Policy{MaxAttempts: -2}}, "Retry.MaxAttempts"},
		{"negative MaxRetryAfter", &Transport{MaxRetryAfter: -time.Second}, "MaxRetryAfter"},
		{"bad status", &Transport{Retry: retry.Policy{Statuses: []int{99}}}, "Retry.Statuses"},
		{"success status", &Transport{Retry: retry.Policy{Statuses: []int{429, 204}}}, "Retry.Statuses"},
		{"bad jitter", &Transport{Retry: retry.Policy{Jitter: retry.Jitter(9)}}, "Retry.Jitter"},
		{"secret header with space", &Transport{SecretHeaders: []string{"X-Token", "a b"}}, "SecretHeaders[1]"},
		{"secret header with newline", &Transport{SecretHeaders: []string{"X-Token\r\nX-Evil"}}, "SecretHeaders[0]"},
		{"empty secret header", &Transport{SecretHeaders: []string{""}}, "SecretHeaders[0]"},
		{"secret headers", &Transport{SecretHeaders: []string{"X-Api-Token", "x-session"}}, ""},
		{"Limits and Limiter", &Transport{Limiter: nop, Limits: Hosts{"*": {}}}, "Limiter"},
		{"bad limit", &Transport{Limits: Hosts{"api.test": {Limit: Limit{err: configErr("Rate.N", 0, "must be positive")}}}}, `Limits["api.test"].Rate.N`},
		{"empty host", &Transport{Limits: Hosts{"": {}}}, `Limits[""]`},
		{"duplicate host", &Transport{Limits: Hosts{"A.test": {}, "a.test": {}}}, `Limits[`},
		{"budget NaN", &Transport{Retry: retry.Policy{Budget: retry.Budget{PercentCanRetry: nan()}}}, "Retry.Budget.PercentCanRetry"},
		{"budget percent above 1000", &Transport{Retry: retry.Policy{Budget: retry.Budget{PercentCanRetry: 1001}}}, "Retry.Budget.PercentCanRetry"},
		{"budget TTL below 1s", &Transport{Retry: retry.Policy{Budget: retry.Budget{TTL: time.Millisecond}}}, "Retry.Budget.TTL"},
		{"budget TTL above 60s", &Transport{Retry: retry.Policy{Budget: retry.Budget{TTL: time.Hour}}}, "Retry.Budget.TTL"},
		{"budget reserve too large", &Transport{Retry: retry.Policy{Budget: retry.Budget{MinRetriesPerSec: 2_000_000}}}, "Retry.Budget.MinRetriesPerSec"},
		{"budget none at all is valid", &Transport{Retry: retry.Policy{Budget: retry.Budget{MinRetriesPerSec: -1, PercentCanRetry: -1}}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.tr.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || !errors.Is(err, ErrInvalidConfig) || !strings.HasPrefix(ce.Field, tt.field) {
				t.Fatalf("Validate() = %v, want a *ConfigError for %s", err, tt.field)
			}
			// RoundTrip reports the same error, sends nothing and closes the body.
			srv := &testhttp.Server{}
			tt.tr.Base = srv
			body := testhttp.NewOneShot("x")
			req := newRequest(t, t.Context(), "PUT", "http://api.test/", "")
			req.Body = body
			if resp, rerr := tt.tr.RoundTrip(req); resp != nil || !errors.Is(rerr, ErrInvalidConfig) {
				t.Errorf("RoundTrip = %v, %v; want an ErrInvalidConfig", resp, rerr)
			}
			if srv.Count() != 0 || !body.Closed() {
				t.Errorf("sent %d, body closed %v; want 0 and true", srv.Count(), body.Closed())
			}
		})
	}
}

func nan() float64 { var z float64; return z / z }

type idleCloser struct {
	testhttp.Server
	closed int
}

func (c *idleCloser) CloseIdleConnections() { c.closed++ }

func TestTransportCloseIdleConnections(t *testing.T) {
	base := &idleCloser{}
	tr := &Transport{Base: base}
	(&http.Client{Transport: tr}).CloseIdleConnections()
	if base.closed != 1 {
		t.Errorf("Base.CloseIdleConnections called %d times, want 1", base.closed)
	}
	(&Transport{Base: &testhttp.Server{}}).CloseIdleConnections() // no method: nothing to do
}

// TestTransportUnderClient runs the Transport inside an http.Client: the
// client follows a redirect whose target is retried, and Client.Timeout
// bounds the retry waits.
func TestTransportUnderClient(t *testing.T) {
	t.Run("redirect", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := &testhttp.Server{Handle: func(n int, r testhttp.Received) (*http.Response, error) {
				switch {
				case strings.HasSuffix(r.URL, "/a"):
					return testhttp.Response(http.StatusFound, "Location", "/b"), nil
				case n == 2:
					return testhttp.Response(http.StatusServiceUnavailable), nil
				}
				return testhttp.ResponseBody(http.StatusOK, "done"), nil
			}}
			client := &http.Client{Transport: &Transport{Base: srv}}
			resp, err := client.Get("http://api.test/a")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != "done" || srv.Count() != 3 {
				t.Errorf("body %q after %d requests, want \"done\" after 3", b, srv.Count())
			}
		})
	})
	t.Run("timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := &testhttp.Server{Steps: []testhttp.Step{testhttp.Status(503, "Retry-After", "10")}}
			client := &http.Client{Transport: &Transport{Base: srv}, Timeout: 5 * time.Second}
			start := time.Now()
			resp, err := client.Get("http://api.test/a")
			if err == nil {
				resp.Body.Close()
				t.Fatal("want an error: the retry would outlast Client.Timeout")
			}
			var we *WaitError
			if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &we) || we.Delay != 10*time.Second {
				t.Errorf("err = %v, want DeadlineExceeded carrying the 10s wait", err)
			}
			if el := time.Since(start); el != 0 || srv.Count() != 1 {
				t.Errorf("failed after %v and %d requests, want at once after 1", el, srv.Count())
			}
		})
	})
}

func TestTransportDeadlineFailsAtOnce(t *testing.T) {
	tests := []struct {
		name   string
		steps  []testhttp.Step
		bo     time.Duration
		wantD  time.Duration
		status int
	}{
		{"retry-after", []testhttp.Step{testhttp.Status(429, "Retry-After", "30")}, time.Second, 30 * time.Second, 429},
		{"backoff", []testhttp.Step{testhttp.Status(502)}, 20 * time.Second, 20 * time.Second, 502},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &testhttp.Server{Steps: tt.steps}
				tr := &Transport{Base: srv, Retry: retry.Policy{NewBackOff: constBackOff(tt.bo), Jitter: retry.NoJitter}}
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				defer cancel()
				start := time.Now()
				resp, err := tr.RoundTrip(newRequest(t, ctx, "GET", "http://api.test/", ""))
				if resp != nil {
					t.Fatal("want no response")
				}
				var we *WaitError
				var ae *AttemptsError
				if !errors.As(err, &we) || !errors.As(err, &ae) || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrWaitExceedsDeadline) {
					t.Fatalf("err = %v, want an *AttemptsError wrapping a deadline *WaitError", err)
				}
				if we.Delay != tt.wantD || ae.StatusCode != tt.status || ae.Attempts != 1 {
					t.Errorf("Delay %v, status %d, attempts %d; want %v, %d, 1", we.Delay, ae.StatusCode, ae.Attempts, tt.wantD, tt.status)
				}
				if el := time.Since(start); el != 0 {
					t.Errorf("returned after %v, want at once", el)
				}
				if !srv.Responses()[0].Body.(*testhttp.Body).Closed() {
					t.Error("discarded response not closed")
				}
			})
		})
	}
}

func TestTransportPacing(t *testing.T) {
	t.Run("spaced", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := &testhttp.Server{}
			tr := &Transport{Base: srv, Limiter: &spacer{every: 100 * time.Millisecond}}
			for range 5 {
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "http://api.test/", ""))
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			rs := srv.Requests()
			for i := 1; i < len(rs); i++ {
				if gap := rs[i].At.Sub(rs[i-1].At); gap != 100*time.Millisecond {
					t.Errorf("gap %d = %v, want 100ms", i, gap)
				}
			}
		})
	})
	t.Run("wait too long", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := &testhttp.Server{}
			tr := &Transport{Base: srv, Limiter: &spacer{every: time.Minute}, MaxWait: 30 * time.Second}
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "http://api.test/", ""))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			body := testhttp.NewOneShot("x")
			req := newRequest(t, t.Context(), "PUT", "http://api.test/", "")
			req.Body = body
			start := time.Now()
			resp, err = tr.RoundTrip(req)
			if resp != nil || !errors.Is(err, ErrRateLimited) || !errors.Is(err, ErrWaitTooLong) {
				t.Fatalf("RoundTrip = %v, %v; want an error matching ErrRateLimited", resp, err)
			}
			if time.Since(start) != 0 || srv.Count() != 1 || !body.Closed() {
				t.Errorf("after %v: %d sent, body closed %v; want at once, 1, true", time.Since(start), srv.Count(), body.Closed())
			}
		})
	})
	t.Run("cancelled wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := &testhttp.Server{}
			sp := &spacer{every: time.Minute}
			tr := &Transport{Base: srv, Limiter: sp}
			resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "http://api.test/", ""))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(time.Second, cancel)
			start := time.Now()
			_, err = tr.RoundTrip(newRequest(t, ctx, "GET", "http://api.test/", ""))
			if !errors.Is(err, context.Canceled) || time.Since(start) != time.Second {
				t.Fatalf("err = %v after %v, want context.Canceled after 1s", err, time.Since(start))
			}
			// The reservation was given back: the next request may go at 1m.
			time.Sleep(time.Minute - time.Second)
			resp, err = tr.RoundTrip(newRequest(t, t.Context(), "GET", "http://api.test/", ""))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := srv.Requests()[1].At.Sub(srv.Requests()[0].At); got != time.Minute {
				t.Errorf("second request %v after the first, want 1m", got)
			}
		})
	})
}

func TestTransportCustomKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &testhttp.Server{Handle: func(n int, r testhttp.Received) (*http.Response, error) {
			if n == 1 {
				return testhttp.Response(429, "Retry-After", "5"), nil
			}
			return testhttp.Response(200), nil
		}}
		var keys []string
		tr := &Transport{
			Base:    srv,
			Key:     func(r *http.Request) string { return r.Header.Get("X-Tenant") },
			OnEvent: func(e Event) { keys = append(keys, e.Key) },
		}
		send := func(tenant string) {
			req := newRequest(t, t.Context(), "GET", "http://API.test:8080/", "")
			if tenant != "" {
				req.Header.Set("X-Tenant", tenant)
			}
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		send("a") // throttled: pauses key "a" for 5s, retried at 5s
		start := time.Now()
		send("b") // another key: not paused
		send("")  // no key: the host
		if el := time.Since(start); el != 0 {
			t.Errorf("other keys waited %v, want 0", el)
		}
		if len(keys) == 0 || keys[0] != "a" || keys[len(keys)-1] != "a" {
			t.Errorf("event keys %q, want only \"a\"", keys)
		}
		tr2 := &Transport{Base: srv}
		if k := (&call{s: mustInit(t, tr2), req: newRequest(t, t.Context(), "GET", "http://API.test:8080/", "")}).keyOf(); k != "api.test:8080" {
			t.Errorf("default key = %q, want api.test:8080", k)
		}
	})
}

func mustInit(t *testing.T, tr *Transport) *state {
	t.Helper()
	s, err := tr.init()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestTransportConnectionReuse: three retries against a loopback server use
// one connection, because every discarded response is drained and closed.
// Real sockets, so no bubble and no timing assertions.
func TestTransportConnectionReuse(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) <= 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, strings.Repeat("busy ", 2000)) // 10 KB to drain
			return
		}
		io.WriteString(w, "ok")
	}))
	var conns atomic.Int32
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	tr := &Transport{Base: base, Retry: retry.Policy{MaxAttempts: 4, NewBackOff: constBackOff(time.Millisecond)}}
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ok" || hits.Load() != 4 {
		t.Fatalf("got %q after %d requests, want ok after 4", b, hits.Load())
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for 4 attempts, want 1", n)
	}
}

// BenchmarkTransportOverhead measures the success path of the Transport
// over a canned in-memory Base, against the bare Base: the Transport's own
// cost per request, with the retry policy on, without and with pacing (a
// token bucket that never blocks), serially and in parallel.
func BenchmarkTransportOverhead(b *testing.B) {
	canned := &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody}
	base := testhttp.RoundTripperFunc(func(*http.Request) (*http.Response, error) { return canned, nil })
	req, _ := http.NewRequest("GET", "http://api.test/v1/items", nil)
	check := func(b *testing.B, resp *http.Response, err error) {
		if err != nil || resp.StatusCode != 200 {
			b.Fatal(resp, err)
		}
	}
	fast := TokenBucket(PerSecond(1_000_000_000), 1_000_000)
	for _, bc := range []struct {
		name string
		rt   http.RoundTripper
	}{
		{"bare", base},
		{"pace", &Transport{Base: base}},
		{"pace+limit", &Transport{Base: base, Limits: Hosts{"*": {Limit: fast}}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				resp, err := bc.rt.RoundTrip(req)
				check(b, resp, err)
			}
		})
		b.Run(bc.name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := bc.rt.RoundTrip(req)
					check(b, resp, err)
				}
			})
		})
	}
}

// TestTransportRetryPolicy runs the policy's switches through the
// Transport: an added Idempotency-Key makes a POST retryable with the same
// key on every attempt (the caller's request untouched), a server hint
// stops retries, and Decide has the last word; each give-up is reported.
func TestTransportRetryPolicy(t *testing.T) {
	tests := []struct {
		name       string
		policy     retry.Policy
		method     string
		steps      []testhttp.Step
		wantSends  int
		wantGiveUp retry.Reason
	}{
		{"POST not retried", retry.Policy{}, "POST", []testhttp.Step{testhttp.Status(503)}, 1, retry.ReasonNotIdempotent},
		{"POST with added key", retry.Policy{AddIdempotencyKey: true}, "POST",
			[]testhttp.Step{testhttp.Status(503), testhttp.Status(503), testhttp.Status(200)}, 3, ""},
		{"POST opted in", retry.Policy{RetryNonIdempotent: true}, "POST",
			[]testhttp.Step{testhttp.Status(503), testhttp.Status(200)}, 2, ""},
		{"server says no", retry.Policy{}, "GET",
			[]testhttp.Step{testhttp.Status(503, "Stripe-Should-Retry", "false")}, 1, retry.ReasonServerHint},
		{"Decide says no", retry.Policy{Decide: func(*retry.Check) bool { return false }}, "GET",
			[]testhttp.Step{testhttp.Status(503)}, 1, retry.ReasonDecided},
		{"custom statuses", retry.Policy{Statuses: []int{404}}, "GET",
			[]testhttp.Step{testhttp.Status(404), testhttp.Status(503)}, 2, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &testhttp.Server{Steps: tt.steps}
				var giveUp retry.Reason
				tr := &Transport{Base: srv, Retry: tt.policy, OnEvent: func(e Event) {
					if e.Kind == EventGiveUp {
						giveUp = e.Reason
					}
				}}
				req := newRequest(t, t.Context(), tt.method, "http://api.test/pay", "amount=10")
				before := testhttp.Snap(req)
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if d := before.Diff(req); d != "" {
					t.Errorf("request modified: %s", d)
				}
				rs := srv.Requests()
				if len(rs) != tt.wantSends || giveUp != tt.wantGiveUp {
					t.Errorf("%d sends, give-up %q; want %d, %q", len(rs), giveUp, tt.wantSends, tt.wantGiveUp)
				}
				if tt.policy.AddIdempotencyKey {
					k := rs[0].Header.Get("Idempotency-Key")
					for i, r := range rs {
						if got := r.Header.Get("Idempotency-Key"); k == "" || got != k {
							t.Errorf("attempt %d key %q, want the first attempt's %q", i+1, got, k)
						}
					}
				}
			})
		})
	}
}

// TestTransportPacingDeadline: a wait for the key's cooldown or its limit
// that would end after the context's deadline fails at once, nothing sent,
// with an error carrying the wait.
func TestTransportPacingDeadline(t *testing.T) {
	tests := []struct {
		name  string
		tr    func(base http.RoundTripper) *Transport
		first testhttp.Step // answer to the request that sets the state up
		wantD time.Duration
	}{
		{"cooldown", func(b http.RoundTripper) *Transport { return &Transport{Base: b, Retry: retry.Policy{MaxAttempts: 1}} },
			testhttp.Status(http.StatusTooManyRequests, "Retry-After", "30"), 30 * time.Second},
		{"limit", func(b http.RoundTripper) *Transport {
			return &Transport{Base: b, Limits: Hosts{"*": {Limit: LeakyBucket(Every(time.Minute), LeakyOptions{Queue: 5})}}}
		}, testhttp.Status(http.StatusOK), time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &testhttp.Server{Steps: []testhttp.Step{tt.first, testhttp.Status(http.StatusOK)}}
				tr := tt.tr(srv)
				roundTrip(t, tr, "GET", "http://api.test/")
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				defer cancel()
				start := time.Now()
				resp, err := tr.RoundTrip(newRequest(t, ctx, "GET", "http://api.test/", ""))
				var we *WaitError
				if resp != nil || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrWaitExceedsDeadline) ||
					!errors.As(err, &we) || we.Delay != tt.wantD {
					t.Fatalf("RoundTrip = %v, %v; want a deadline *WaitError carrying %v", resp, err, tt.wantD)
				}
				if el := time.Since(start); el != 0 || srv.Count() != 1 {
					t.Errorf("failed after %v with %d sent, want at once with 1", el, srv.Count())
				}
			})
		})
	}
}

// TestTransportRetryAfterDateRetryablehttp144: a 429 whose Retry-After is an
// HTTP-date (RFC 9110 §10.2.3) 30 s ahead, in each of the three forms of
// §5.6.7 (hashicorp/go-retryablehttp#144 asked for the date form), with the
// Date a real server sends: the clock truncated to the second (§6.6.1). The
// client's clock is 300 ms past the second, so a wait measured from the
// Date would arrive 300 ms late; the retry goes out at the named instant,
// never before it and at most 50 ms after.
func TestTransportRetryAfterDateRetryablehttp144(t *testing.T) {
	for _, f := range httpDateForms {
		t.Run(f.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				time.Sleep(300 * time.Millisecond) // bubbles start on a whole second
				var named time.Time
				srv := &testhttp.Server{Handle: func(n int, r testhttp.Received) (*http.Response, error) {
					if n == 1 {
						date := r.At.UTC().Truncate(time.Second)
						named = date.Add(30 * time.Second)
						return testhttp.Response(http.StatusTooManyRequests,
							"Date", date.Format(http.TimeFormat),
							"Retry-After", named.Format(f.layout)), nil
					}
					return testhttp.Response(http.StatusOK), nil
				}}
				tr := &Transport{Base: srv, MaxWait: time.Minute, MaxRetryAfter: time.Minute}
				resp, err := tr.RoundTrip(newRequest(t, t.Context(), http.MethodGet, "http://api.test/", ""))
				require.NoError(t, err)
				resp.Body.Close()
				assert.Equal(t, http.StatusOK, resp.StatusCode)
				rs := srv.Requests()
				require.Len(t, rs, 2)
				late := rs[1].At.Sub(named) // before the fix: 300ms
				assert.GreaterOrEqual(t, late, time.Duration(0), "retry %v before the named instant", -late)
				assert.LessOrEqual(t, late, 50*time.Millisecond, "retry %v after the named instant", late)
			})
		})
	}
}

// TestTransportAllErrorOnce: a bad part inside All(...) in Hosts is
// reported once, as a *ConfigError naming the entry, the part numbered as
// written (from 1).
func TestTransportAllErrorOnce(t *testing.T) {
	tr := &Transport{Limits: Hosts{"api.test": {Limit: All(TokenBucket(PerSecond(1), 1), FixedWindow(Rate{N: 0, Per: time.Second}))}}}
	err := tr.Validate()
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	require.ErrorIs(t, err, ErrInvalidConfig)
	assert.Equal(t, `Limits["api.test"]`, ce.Field)
	assert.Equal(t, `pace: invalid Limits["api.test"]: part 2 of All: invalid Rate.N 0: must be positive`, err.Error())
	assert.Equal(t, 1, strings.Count(err.Error(), "Rate.N"), "the inner error once")
}

// TestTransportNilURL: a request with no URL fails at once with an error
// that says so, sends nothing, and closes the body (net/http's Transport
// refuses it the same way); it is no *AttemptsError.
func TestTransportNilURL(t *testing.T) {
	srv := &testhttp.Server{}
	body := newOneShotBody("x")
	resp, err := (&Transport{Base: srv}).RoundTrip(&http.Request{Method: "POST", Header: http.Header{}, Body: body})
	assert.Nil(t, resp)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nil Request.URL")
	var ae *AttemptsError
	assert.False(t, errors.As(err, &ae), "nothing was attempted")
	assert.Empty(t, srv.Requests())
	assert.Equal(t, int32(1), body.closed.Load(), "the body is closed once")
}
