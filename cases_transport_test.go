package pace

// One test per case of /shared/cases/README.md that the Transport issue
// names. Timings run in testing/synctest bubbles over in-memory servers;
// C13 and C15 need real sockets and run outside bubbles, without timing
// assertions.

import (
	"bufio"
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
	"time"

	"golang.org/x/net/http2"
)

// TestCaseC13PostNotReplayed: a raw TCP server reads the whole request,
// records it, and resets the connection without answering. A POST without
// Idempotency-Key is sent once and the caller gets the transport error;
// PUT, GET and a POST with Idempotency-Key are retried.
func TestCaseC13PostNotReplayed(t *testing.T) {
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
			tr := &Transport{Base: base, MaxAttempts: 4, NewBackOff: constBackOff(time.Millisecond)} // RetryMax 3
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

// TestCaseC15GoawayReplaysBody: a TLS HTTP/2 server whose first connection,
// built on the frame layer, reads a POST's HEADERS and DATA frames and then
// sends GOAWAY(last-stream-id 0, NO_ERROR) and closes. The request, whose
// body is a one-shot reader, must reach the real handler over connection 2
// with its 11 bytes, because the Transport gives its buffered body a
// GetBody that net/http's HTTP/2 client uses to replay the unprocessed
// stream. When the body is too large to buffer, the caller gets an error
// and the handler sees nothing: never an empty body.
func TestCaseC15GoawayReplaysBody(t *testing.T) {
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
