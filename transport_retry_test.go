package pace

// One test per upstream bug report (repo#N in each test's comment) that
// the Transport issue names. Timings run in testing/synctest bubbles over in-memory servers;
// the POST-drop and GOAWAY tests need real sockets and run outside bubbles, without timing
// assertions.

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cenkalti/backoff/v4"
	"golang.org/x/net/http2"

	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/pacehttp/pace/retry"
)

// gaps returns the time between consecutive requests a server received.
func gaps(rs []testhttp.Received) []time.Duration {
	var g []time.Duration
	for i := 1; i < len(rs); i++ {
		g = append(g, rs[i].At.Sub(rs[i-1].At))
	}
	return g
}

// roundTrip sends a GET through tr and returns the final status, closing
// the body; it fails the test on an error.
func roundTrip(t *testing.T, tr *Transport, method, url string) int {
	t.Helper()
	resp, err := tr.RoundTrip(newRequest(t, t.Context(), method, url, ""))
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// httpDateForms are the three forms of an HTTP-date that RFC 9110 §5.6.7
// requires recipients to accept, as time layouts.
var httpDateForms = []struct{ name, layout string }{
	{"IMF-fixdate", http.TimeFormat},
	{"RFC 850", "Monday, 02-Jan-06 15:04:05 GMT"},
	{"asctime", time.ANSIC},
}

// TestTransportRetryAfterDateForms is hashicorp/go-retryablehttp#144: a 429 whose Retry-After is an HTTP-date
// 30 s after the response's Date, in each of the three forms RFC 9110
// §5.6.7 requires recipients to accept. The retry reaches the server at the
// named instant, never before, and no more than 1 s after; 2 requests.
func TestTransportRetryAfterDateForms(t *testing.T) {
	for _, f := range httpDateForms {
		t.Run(f.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var named time.Time
				srv := &testhttp.Server{Handle: func(n int, r testhttp.Received) (*http.Response, error) {
					if n == 1 {
						now := time.Now().UTC() // a whole second: bubbles start at 2000-01-01T00:00:00Z
						named = now.Add(30 * time.Second)
						return testhttp.Response(http.StatusTooManyRequests,
							"Date", now.Format(http.TimeFormat),
							"Retry-After", named.Format(f.layout)), nil
					}
					return testhttp.Response(http.StatusOK), nil
				}}
				tr := &Transport{Base: srv, MaxWait: time.Minute, MaxRetryAfter: time.Minute}
				if code := roundTrip(t, tr, "GET", "http://api.test/"); code != http.StatusOK {
					t.Fatalf("status %d, want 200", code)
				}
				rs := srv.Requests()
				if len(rs) != 2 {
					t.Fatalf("%d requests, want 2", len(rs))
				}
				if late := rs[1].At.Sub(named); late < 0 || late > time.Second {
					t.Errorf("retry arrived %v after the named instant, want within [0, 1s]", late)
				}
			})
		})
	}
}

// TestTransportRetryAfterOn503: Retry-After on a 503 is honoured: the retry
// comes 7 s after the 503, not after the 1 s base backoff; 2 requests.
func TestTransportRetryAfterOn503(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &testhttp.Server{Steps: []testhttp.Step{
			testhttp.Status(http.StatusServiceUnavailable, "Retry-After", "7"),
			testhttp.Status(http.StatusOK),
		}}
		tr := &Transport{Base: srv, Retry: retry.Policy{NewBackOff: constBackOff(time.Second)}}
		if code := roundTrip(t, tr, "GET", "http://api.test/"); code != http.StatusOK {
			t.Fatalf("status %d, want 200", code)
		}
		if g := gaps(srv.Requests()); len(g) != 1 || g[0] != 7*time.Second {
			t.Errorf("gaps %v, want one of 7s", g)
		}
	})
}

// TestTransportRetryAfterAboveCap is hashicorp/go-retryablehttp#247: a server that always answers 429 with
// Retry-After: 3600, against a cap of 10 s and RetryMax 3: one request, the
// 429 back at once with its hint readable, the observer told why, and the
// key paused for the cap, not the hour, so that the next call waits 10 s
// and is sent.
func TestTransportRetryAfterAboveCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &testhttp.Server{Steps: []testhttp.Step{testhttp.Status(http.StatusTooManyRequests, "Retry-After", "3600")}}
		var giveUp Event
		tr := &Transport{
			Base: srv, Retry: retry.Policy{MaxAttempts: 4}, MaxRetryAfter: 10 * time.Second, MaxWait: 10 * time.Second,
			OnEvent: func(e Event) {
				if e.Kind == EventGiveUp {
					giveUp = e
				}
			},
		}
		start := time.Now()
		resp, err := tr.RoundTrip(newRequest(t, t.Context(), "GET", "http://api.test/", ""))
		if err != nil {
			t.Fatalf("RoundTrip: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "3600" {
			t.Errorf("got %d with Retry-After %q, want the 429 and its 3600", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
		if el := time.Since(start); el != 0 || srv.Count() != 1 {
			t.Errorf("returned after %v and %d requests, want at once after 1", el, srv.Count())
		}
		if giveUp.Reason != retry.ReasonDelayTooLong || giveUp.Delay != time.Hour {
			t.Errorf("give-up event %+v, want reason %q with the 1h delay", giveUp, retry.ReasonDelayTooLong)
		}
		// The key is paused for MaxRetryAfter (10 s), not the hour: a new
		// call waits the 10 s and is sent.
		start = time.Now()
		if code := roundTrip(t, tr, "GET", "http://api.test/"); code != http.StatusTooManyRequests {
			t.Errorf("next call: status %d, want the server's 429", code)
		}
		if el := time.Since(start); el != 10*time.Second || srv.Count() != 2 {
			t.Errorf("next call returned after %v and %d requests in all, want after the 10s cap, 2", el, srv.Count())
		}
	})
}

// TestTransportOneShotBodyReplayed is philippta/trip#1: a one-shot body (no GetBody) is sent again
// byte for byte, with its Content-Length, when the method allows a retry;
// a body above the buffer limit is sent once, whole, and the 503 returned.
func TestTransportOneShotBodyReplayed(t *testing.T) {
	tests := []struct {
		name, method, idemKey string
		maxBuffered           int64
		wantSends             int
		wantCode              int
	}{
		{"PUT", "PUT", "", 0, 2, 200},
		{"POST with Idempotency-Key", "POST", "k-7", 0, 2, 200},
		{"above the buffer limit", "PUT", "", 5, 1, 503},
		{"buffering off", "PUT", "", -1, 1, 503},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &testhttp.Server{Steps: []testhttp.Step{testhttp.Status(503), testhttp.Status(200)}}
				tr := &Transport{Base: srv, MaxBufferedBody: tt.maxBuffered}
				req := newRequest(t, t.Context(), tt.method, "http://api.test/orders", "")
				req.Body = testhttp.NewOneShot("hello world")
				req.ContentLength = 11
				if tt.idemKey != "" {
					req.Header.Set("Idempotency-Key", tt.idemKey)
				}
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				rs := srv.Requests()
				if resp.StatusCode != tt.wantCode || len(rs) != tt.wantSends {
					t.Fatalf("%d after %d requests, want %d after %d", resp.StatusCode, len(rs), tt.wantCode, tt.wantSends)
				}
				for i, r := range rs {
					if string(r.Body) != "hello world" || r.ContentLength != 11 {
						t.Errorf("attempt %d: body %q, Content-Length %d; want the 11 bytes", i+1, r.Body, r.ContentLength)
					}
				}
			})
		})
	}
}

// TestTransportPermanentServerErrors (aws/aws-sdk-go#1819): 501, 505, 506, 510 and 511 are final:
// one request, returned with no added wait.
func TestTransportPermanentServerErrors(t *testing.T) {
	for _, code := range []int{501, 505, 506, 510, 511} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &testhttp.Server{Steps: []testhttp.Step{testhttp.Status(code)}}
				tr := &Transport{Base: srv, Retry: retry.Policy{MaxAttempts: 4, NewBackOff: constBackOff(time.Second)}}
				start := time.Now()
				if got := roundTrip(t, tr, "GET", "http://api.test/"); got != code {
					t.Errorf("status %d, want %d", got, code)
				}
				if el := time.Since(start); el != 0 || srv.Count() != 1 {
					t.Errorf("%d requests in %v, want 1 at once", srv.Count(), el)
				}
			})
		})
	}
}

// TestTransportPostNotReplayed is digitalocean/netbox-ip-controller#14: a raw TCP server reads the whole request,
// records it, and resets the connection without answering. A POST without
// Idempotency-Key is sent once and the caller gets the transport error;
// PUT, GET and a POST with Idempotency-Key are retried.
func TestTransportPostNotReplayed(t *testing.T) {
	tests := []struct {
		method, idemKey string
		wantRecorded    int
	}{
		{"POST", "", 1},
		{"PUT", "", 4},
		{"GET", "", 4},
		{"POST", "order-42", 4},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.idemKey, func(t *testing.T) {
			srv := newResetServer(t)
			base := &http.Transport{}
			defer base.CloseIdleConnections()
			tr := &Transport{Base: base, Retry: retry.Policy{MaxAttempts: 4, NewBackOff: constBackOff(time.Millisecond)}} // RetryMax 3
			body := ""
			if tt.method != "GET" {
				body = "hello world"
			}
			req := newRequest(t, t.Context(), tt.method, "http://"+srv.addr+"/orders", body)
			if tt.idemKey != "" {
				req.Header.Set("Idempotency-Key", tt.idemKey)
			}
			resp, err := tr.RoundTrip(req)
			if resp != nil {
				resp.Body.Close()
				t.Fatalf("got a response %d, want the transport error", resp.StatusCode)
			}
			var ae *AttemptsError
			if !errors.As(err, &ae) || ae.Attempts != tt.wantRecorded {
				t.Errorf("err = %v, want an *AttemptsError after %d attempts", err, tt.wantRecorded)
			}
			srv.close()
			got := srv.recorded()
			if len(got) != tt.wantRecorded {
				t.Errorf("server recorded %d requests, want %d", len(got), tt.wantRecorded)
			}
			for _, r := range got {
				if r != tt.method+" "+body {
					t.Errorf("recorded %q, want %q", r, tt.method+" "+body)
				}
			}
		})
	}
}

// resetServer reads one full HTTP/1.1 request per connection, records it,
// then closes the connection with linger 0 (a TCP reset) without replying.
type resetServer struct {
	ln   net.Listener
	addr string
	wg   sync.WaitGroup
	mu   sync.Mutex
	got  []string
}

func newResetServer(t *testing.T) *resetServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &resetServer{ln: ln, addr: ln.Addr().String()}
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Go(func() { s.serve(c) })
		}
	})
	t.Cleanup(s.close)
	return s
}

func (s *resetServer) serve(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second)) // a bound on a broken test, not a timing assertion
	req, err := http.ReadRequest(bufio.NewReader(c))
	if err != nil {
		return
	}
	b, err := io.ReadAll(req.Body)
	if err != nil {
		return
	}
	s.mu.Lock()
	s.got = append(s.got, req.Method+" "+string(b))
	s.mu.Unlock()
	c.(*net.TCPConn).SetLinger(0)
}

func (s *resetServer) close() {
	s.ln.Close()
	s.wg.Wait()
}

func (s *resetServer) recorded() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}

// TestTransportGoawayReplaysBody: a TLS HTTP/2 server whose first connection,
// built on the frame layer, reads a POST's HEADERS and DATA frames and then
// sends GOAWAY(last-stream-id 0, NO_ERROR) and closes. The request, whose
// body is a one-shot reader, must reach the real handler over connection 2
// with its 11 bytes, because the Transport gives its buffered body a
// GetBody that net/http's HTTP/2 client uses to replay the unprocessed
// stream. When the body is too large to buffer, the caller gets an error
// and the handler sees nothing: never an empty body.
func TestTransportGoawayReplaysBody(t *testing.T) {
	tests := []struct {
		name        string
		maxBuffered int64
		wantHandled int
	}{
		{"buffered body replayed", 0, 1},
		{"body above buffer limit", 5, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			type seen struct {
				body  string
				cl    int64
				proto int
			}
			var mu sync.Mutex
			var handled []seen
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				handled = append(handled, seen{string(b), r.ContentLength, r.ProtoMajor})
				mu.Unlock()
				io.WriteString(w, "created")
			}))
			srv.EnableHTTP2 = true
			gl := &goawayListener{Listener: srv.Listener, srv: srv}
			srv.Listener = gl
			srv.StartTLS()
			defer func() {
				srv.Close()
				gl.wg.Wait()
			}()
			base := srv.Client().Transport.(*http.Transport)
			defer base.CloseIdleConnections()
			tr := &Transport{Base: base, MaxBufferedBody: tt.maxBuffered}

			req := newRequest(t, t.Context(), "POST", srv.URL+"/orders", "")
			req.Body = io.NopCloser(strings.NewReader("hello world")) // one-shot, no GetBody
			req.ContentLength = 11
			resp, err := tr.RoundTrip(req)
			if tt.wantHandled == 1 {
				if err != nil {
					t.Fatalf("RoundTrip: %v", err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || string(b) != "created" || resp.ProtoMajor != 2 {
					t.Errorf("got %d %q over HTTP/%d, want 200 \"created\" over HTTP/2", resp.StatusCode, b, resp.ProtoMajor)
				}
			} else if err == nil {
				resp.Body.Close()
				t.Fatalf("got %d, want an error: the body cannot be replayed", resp.StatusCode)
			}
			if got := gl.firstBody(); got != "hello world" {
				t.Errorf("connection 1 received body %q before its GOAWAY, want the 11 bytes", got)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(handled) != tt.wantHandled {
				t.Fatalf("handler saw %d requests, want %d", len(handled), tt.wantHandled)
			}
			for _, h := range handled {
				if h.body != "hello world" || h.cl != 11 || h.proto != 2 {
					t.Errorf("handler saw body %q, content-length %d, HTTP/%d; want the 11 bytes over HTTP/2", h.body, h.cl, h.proto)
				}
			}
			if n := gl.accepted.Load(); n != 1+int32(tt.wantHandled) {
				t.Errorf("%d connections, want %d", n, 1+tt.wantHandled)
			}
		})
	}
}

// goawayListener hands its first connection to a frame-level HTTP/2 server
// that reads one request and answers GOAWAY; later connections go to srv.
type goawayListener struct {
	net.Listener
	srv      *httptest.Server
	accepted atomic.Int32
	wg       sync.WaitGroup
	mu       sync.Mutex
	body     []byte
}

func (l *goawayListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if l.accepted.Add(1) == 1 {
		l.wg.Go(func() { l.goaway(c) })
		return l.Accept()
	}
	return c, nil
}

func (l *goawayListener) firstBody() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.body)
}

func (l *goawayListener) goaway(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second)) // a bound on a broken test
	tc := tls.Server(c, l.srv.TLS)
	if err := tc.Handshake(); err != nil || tc.ConnectionState().NegotiatedProtocol != "h2" {
		return
	}
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(tc, preface); err != nil || string(preface) != http2.ClientPreface {
		return
	}
	fr := http2.NewFramer(tc, tc)
	if fr.WriteSettings() != nil {
		return
	}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
			}
		case *http2.DataFrame:
			l.mu.Lock()
			l.body = append(l.body, f.Data()...)
			l.mu.Unlock()
			if f.StreamEnded() {
				fr.WriteGoAway(0, http2.ErrCodeNo, nil)
				tc.CloseWrite()
				io.Copy(io.Discard, tc) // until the client closes
				return
			}
		}
	}
}

// TestTransportOneThrottlePausesTheHost: a host paced at 10/s, 10 workers
// sharing 50 requests; the server answers 429 to every request in the 2 s
// after its first one, then 200. After the first 429 reaches the client at
// t0, no request leaves until the key's pause P is over: 3 s when it
// carries Retry-After: 3. A 429 without Retry-After of a key with a limit
// first lowers the key's adaptive rate and pauses it only briefly
// (retry.MinThrottlePause); its probe meets the server's window again, and that
// second 429 pauses the key for retry.DefaultThrottlePause (5 s) at least. When
// the pause ends, the waiting requests leave paced by the host's limit,
// after the server's 2 s of 429s: each run meets exactly 1 429 (2 without
// Retry-After). All 50 requests end in 200, and no 1 s window holds more
// than 10 sends, retries included.
func TestTransportOneThrottlePausesTheHost(t *testing.T) {
	tests := []struct {
		name       string
		retryAfter string
		wantPause  time.Duration
		want429    int
	}{
		{"no Retry-After", "", retry.DefaultThrottlePause, 2},
		{"Retry-After: 3", "3", 3 * time.Second, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var first time.Time
				srv := &testhttp.Server{Handle: func(n int, r testhttp.Received) (*http.Response, error) {
					if n == 1 {
						first = r.At
						if tt.retryAfter != "" {
							return testhttp.Response(http.StatusTooManyRequests, "Retry-After", tt.retryAfter), nil
						}
					}
					if r.At.Sub(first) < 2*time.Second {
						return testhttp.Response(http.StatusTooManyRequests), nil
					}
					return testhttp.Response(http.StatusOK), nil
				}}
				tr := &Transport{Base: srv, Limits: Hosts{"api.test": {Limit: LeakyBucket(PerSecond(10), LeakyOptions{Queue: 50})}}}
				jobs := make(chan int, 50)
				for i := range 50 {
					jobs <- i
				}
				close(jobs)
				codes := make([]int, 50)
				var wg sync.WaitGroup
				for range 10 {
					wg.Go(func() {
						for i := range jobs {
							req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://api.test/items", nil)
							resp, err := tr.RoundTrip(req)
							if err != nil {
								t.Errorf("request %d: %v", i, err)
								continue
							}
							codes[i] = resp.StatusCode
							resp.Body.Close()
						}
					})
				}
				wg.Wait()
				for i, c := range codes {
					if c != http.StatusOK {
						t.Errorf("request %d ended with %d, want 200", i, c)
					}
				}
				rs := srv.Requests()
				t0 := rs[0].At // the server answers at once: the 429 reaches the client at t0
				from := 1      // the first request after the pause
				if tt.want429 == 2 {
					// The brief pause, then the probe: its 429 starts the long pause.
					if d := rs[1].At.Sub(t0); d < retry.MinThrottlePause || d > time.Second {
						t.Errorf("the probe left %v after the first 429, want %v to 1s", d, retry.MinThrottlePause)
					}
					t0, from = rs[1].At, 2
				}
				n429 := 0
				for i, r := range rs {
					if r.At.Sub(first) < 2*time.Second {
						n429++
					}
					if d := r.At.Sub(t0); i >= from && d < tt.wantPause {
						t.Errorf("a request left %v after the first 429, inside the %v pause", d, tt.wantPause)
					}
				}
				if n429 != tt.want429 {
					t.Errorf("%d requests met a 429, want %d", n429, tt.want429)
				}
				longest := tt.wantPause
				if from == 2 {
					longest *= 2 // the second strike's pause is jittered up to twice
				}
				if gap := rs[from].At.Sub(t0); gap > longest+100*time.Millisecond {
					t.Errorf("the host resumed %v after the first 429, want %v +0.1s", gap, tt.wantPause)
				}
				for i := range rs {
					j := i
					for j < len(rs) && rs[j].At.Sub(rs[i].At) < time.Second {
						j++
					}
					if j-i > 10 {
						t.Fatalf("%d sends in the second from %v, want at most 10", j-i, rs[i].At.Sub(t0))
					}
				}
			})
		})
	}
}

// TestTransportInvalidRetryAfter: a Retry-After that is negative, decimal or
// garbage is ignored and the fallback backoff (2 s, jitter off) applies; a
// date in the past means retry now. No panic, no error: each run ends in 200
// after 2 requests.
func TestTransportInvalidRetryAfter(t *testing.T) {
	tests := []struct {
		name    string
		value   func(now time.Time) string
		wantGap time.Duration
	}{
		{"-1", func(time.Time) string { return "-1" }, 2 * time.Second},
		{"1.", func(time.Time) string { return "1." }, 2 * time.Second},
		// A fraction, as Shopify sends it ("Retry-After: 2.0"), is a delay.
		{"1.5", func(time.Time) string { return "1.5" }, 1500 * time.Millisecond},
		{"soon", func(time.Time) string { return "soon" }, 2 * time.Second},
		// A past date means now, but a throttle still pauses its key for
		// retry.MinThrottlePause (well within the 0.1 s of openai/openai-java#853).
		{"past date", func(now time.Time) string { return now.Add(-time.Minute).UTC().Format(http.TimeFormat) }, retry.MinThrottlePause},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &testhttp.Server{Handle: func(n int, r testhttp.Received) (*http.Response, error) {
					if n == 1 {
						return testhttp.Response(http.StatusTooManyRequests, "Retry-After", tt.value(time.Now())), nil
					}
					return testhttp.Response(http.StatusOK), nil
				}}
				tr := &Transport{Base: srv, Retry: retry.Policy{NewBackOff: constBackOff(2 * time.Second), Jitter: retry.NoJitter}}
				if code := roundTrip(t, tr, "GET", "http://api.test/"); code != http.StatusOK {
					t.Fatalf("status %d, want 200", code)
				}
				if g := gaps(srv.Requests()); len(g) != 1 || g[0] != tt.wantGap {
					t.Errorf("gaps %v, want one of %v", g, tt.wantGap)
				}
			})
		})
	}
}

// TestTransportCancelDuringBackoff: the server always answers 503, the
// backoff is 5 s, and the caller cancels 200 ms after the first response.
// The call returns context.Canceled at the cancel, after 1 request, and
// leaves no goroutine behind (the bubble would not end otherwise).
func TestTransportCancelDuringBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &testhttp.Server{Steps: []testhttp.Step{testhttp.Status(http.StatusServiceUnavailable)}}
		tr := &Transport{Base: srv, Retry: retry.Policy{MaxAttempts: 4, NewBackOff: constBackOff(5 * time.Second), Jitter: retry.NoJitter}}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		time.AfterFunc(200*time.Millisecond, cancel)
		start := time.Now()
		resp, err := tr.RoundTrip(newRequest(t, ctx, "GET", "http://api.test/", ""))
		if resp != nil || !errors.Is(err, context.Canceled) {
			t.Fatalf("RoundTrip = %v, %v; want context.Canceled", resp, err)
		}
		if el := time.Since(start); el != 200*time.Millisecond || srv.Count() != 1 {
			t.Errorf("returned after %v and %d requests, want at the cancel (200ms) after 1", el, srv.Count())
		}
	})
}

// TestTransportBackoffAfterManyAttempts is carlescere/goback#5: the schedule itself (base 100 ms, ×2,
// cap 1 s, attempts up to 2^31−1) is TestBackoffManyAttempts in
// jitter_test.go. Here the Transport runs 200 attempts on it: every wait is
// within [100 ms, 1 s], exactly 1 s from the 5th on, never 0 or negative.
func TestTransportBackoffAfterManyAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &testhttp.Server{Steps: []testhttp.Step{testhttp.Status(http.StatusBadGateway)}}
		tr := &Transport{
			Base: srv, Retry: retry.Policy{
				MaxAttempts: 200,
				Jitter:      retry.NoJitter,
				Budget:      retry.Budget{Disabled: true},
				NewBackOff: func() backoff.BackOff {
					return backoff.NewExponentialBackOff(backoff.WithInitialInterval(100*time.Millisecond),
						backoff.WithMultiplier(2), backoff.WithMaxInterval(time.Second),
						backoff.WithRandomizationFactor(0), backoff.WithMaxElapsedTime(0))
				},
			},
		}
		if code := roundTrip(t, tr, "GET", "http://api.test/"); code != http.StatusBadGateway {
			t.Fatalf("status %d, want the last 502", code)
		}
		g := gaps(srv.Requests())
		if len(g) != 199 {
			t.Fatalf("%d waits, want 199", len(g))
		}
		want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond}
		for i, d := range g {
			w := time.Second
			if i < len(want) {
				w = want[i]
			}
			if d != w {
				t.Fatalf("wait %d = %v, want %v", i+1, d, w)
			}
		}
	})
}

// TestRetryPolicyValidate: statuses must be error statuses (a 2xx or 3xx is
// never retried, so listing one is a mistake) and the idempotency header an
// RFC 9110 §5.6.2 token.
func TestRetryPolicyValidate(t *testing.T) {
	tests := []struct {
		name      string
		p         retry.Policy
		wantField string
	}{
		{"zero", retry.Policy{}, ""},
		{"custom", retry.Policy{Statuses: []int{425, 599}, IdempotencyHeader: "X-Key"}, ""},
		{"status too low", retry.Policy{Statuses: []int{99}}, "Statuses"},
		{"status too high", retry.Policy{Statuses: []int{600}}, "Statuses"},
		{"informational status", retry.Policy{Statuses: []int{100}}, "Statuses"},
		{"success status", retry.Policy{Statuses: []int{503, 200}}, "Statuses"},
		{"redirect status", retry.Policy{Statuses: []int{301}}, "Statuses"},
		{"lowest error status", retry.Policy{Statuses: []int{400}}, ""},
		{"header with newline", retry.Policy{IdempotencyHeader: "Idempotency-Key\n"}, "IdempotencyHeader"},
		{"header with space", retry.Policy{IdempotencyHeader: "Idempotency Key"}, "IdempotencyHeader"},
		{"header with colon", retry.Policy{IdempotencyHeader: "Key:"}, "IdempotencyHeader"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := policyErr(&tt.p)
			var ce *ConfigError
			switch {
			case tt.wantField == "" && err != nil:
				t.Errorf("policyErr() = %v, want nil", err)
			case tt.wantField != "" && (!errors.As(err, &ce) || ce.Field != tt.wantField || !errors.Is(err, ErrInvalidConfig)):
				t.Errorf("policyErr() = %v, want a *ConfigError for %s", err, tt.wantField)
			}
		})
	}
}
