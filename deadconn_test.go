package pace

// A pooled HTTP/2 connection whose server went silent (no GOAWAY, no RST)
// must not eat every retry: googleapis/google-cloud-go#3522 (a dead pooled
// HTTP/2 connection kept being tried) and celzero/firestack#241 (retries
// picked the dead connection until PING health checks were on).

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// silentServer is an HTTP/2 (or HTTP/1.1) server over TLS on loopback whose connections
// each answer one request and then go silent: the server reads nothing
// more from them (no request, no PING, no SETTINGS), sends no GOAWAY and
// closes nothing, as a peer behind a dead NAT entry or a hung proxy.
type silentServer struct {
	*httptest.Server
	accepted atomic.Int32
	mu       sync.Mutex
	conns    []*silentConn
}

func newSilentServer(t *testing.T, http2 bool) *silentServer {
	t.Helper()
	s := &silentServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok"))
		w.(http.Flusher).Flush()
		r.Context().Value(silentConnKey{}).(*silentConn).silence()
	}))
	s.EnableHTTP2 = http2
	s.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, silentConnKey{}, c.(*tls.Conn).NetConn().(*silentConn))
	}
	s.Listener = &silentListener{Listener: s.Listener, s: s}
	s.StartTLS()
	t.Cleanup(func() {
		s.mu.Lock()
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.Close()
	})
	return s
}

type silentConnKey struct{}

type silentListener struct {
	net.Listener
	s *silentServer
}

func (l *silentListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.s.accepted.Add(1)
	sc := &silentConn{Conn: c, closed: make(chan struct{})}
	l.s.mu.Lock()
	l.s.conns = append(l.s.conns, sc)
	l.s.mu.Unlock()
	return sc, nil
}

// silentConn drops what it reads once silenced and blocks until closed.
type silentConn struct {
	net.Conn
	silent    atomic.Bool
	closed    chan struct{}
	closeOnce sync.Once
}

func (c *silentConn) silence() { c.silent.Store(true) }

func (c *silentConn) Read(p []byte) (int, error) {
	if !c.silent.Load() {
		n, err := c.Conn.Read(p)
		if !c.silent.Load() || err != nil {
			return n, err
		}
	}
	<-c.closed
	return 0, net.ErrClosed
}

func (c *silentConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// TestGoogleCloudGo3522SilentConnRetriedOnFreshConn: the first GET leaves
// a pooled connection that then goes silent; the second GET's first
// attempt goes onto it and times out, and its retry goes out on a fresh
// connection and succeeds, within the attempt timeout and 0.5 s. The
// attempt timeout is the Base's ResponseHeaderTimeout, or, with the
// default Base's HTTP/2 pings (here shortened), the ping's idle time and
// timeout. Over HTTP/1, net/http closes the connection that timed out.
func TestGoogleCloudGo3522SilentConnRetriedOnFreshConn(t *testing.T) {
	for _, tt := range []struct {
		name           string
		http2          bool
		attemptTimeout time.Duration
		base           func(*http.Transport) *http.Transport
	}{
		{"HTTP/2 ResponseHeaderTimeout", true, 500 * time.Millisecond, func(b *http.Transport) *http.Transport {
			b.ResponseHeaderTimeout = 500 * time.Millisecond
			return b
		}},
		{"HTTP/2 default Base's pings", true, 400 * time.Millisecond, func(b *http.Transport) *http.Transport {
			return withPings(b, 200*time.Millisecond, 200*time.Millisecond)
		}},
		{"HTTP/1 ResponseHeaderTimeout", false, 500 * time.Millisecond, func(b *http.Transport) *http.Transport {
			b.ResponseHeaderTimeout = 500 * time.Millisecond
			return b
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := newSilentServer(t, tt.http2)
			base := tt.base(srv.Client().Transport.(*http.Transport).Clone())
			defer base.CloseIdleConnections()
			var retries atomic.Int32
			tr := &Transport{Base: base, OnEvent: func(e Event) {
				if e.Kind == EventRetry {
					retries.Add(1)
				}
			}}
			get := func() (*http.Response, error) {
				return tr.RoundTrip(newRequest(t, t.Context(), "GET", srv.URL+"/", ""))
			}
			resp, err := get()
			require.NoError(t, err)
			io.Copy(io.Discard, resp.Body) // so that HTTP/1 reuses the connection
			resp.Body.Close()
			wantProto := 1
			if tt.http2 {
				wantProto = 2
			}
			require.Equal(t, wantProto, resp.ProtoMajor)

			start := time.Now()
			resp, err = get()
			elapsed := time.Since(start)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, 200, resp.StatusCode)
			assert.EqualValues(t, 1, retries.Load(), "one retry: the second attempt succeeds")
			assert.EqualValues(t, 2, srv.accepted.Load(), "the retry went out on a second connection")
			assert.Less(t, elapsed, tt.attemptTimeout+500*time.Millisecond)
		})
	}
}

// TestDefaultBasePings: a Transport whose Base is nil sends through one
// shared clone of http.DefaultTransport with HTTP/2 health checks.
func TestDefaultBasePings(t *testing.T) {
	st, err := (&Transport{}).init()
	require.NoError(t, err)
	st2, err := (&Transport{}).init()
	require.NoError(t, err)
	base, ok := st.base.(*http.Transport)
	require.True(t, ok, "default Base is %T", st.base)
	assert.Same(t, base, st2.base, "one default Base, shared")
	assert.NotSame(t, http.DefaultTransport, base)
	require.NotNil(t, base.HTTP2)
	assert.Equal(t, 30*time.Second, base.HTTP2.SendPingTimeout)
	assert.Equal(t, 15*time.Second, base.HTTP2.PingTimeout)
	assert.True(t, base.ForceAttemptHTTP2)
	assert.Nil(t, http.DefaultTransport.(*http.Transport).HTTP2, "http.DefaultTransport unchanged")

	// A setting of the caller's own is kept.
	own := &http.Transport{HTTP2: &http.HTTP2Config{SendPingTimeout: time.Second, MaxReadFrameSize: 1 << 20}}
	c := withPings(own, time.Minute, time.Minute)
	assert.Equal(t, http.HTTP2Config{SendPingTimeout: time.Second, MaxReadFrameSize: 1 << 20}, *c.HTTP2)
	assert.Equal(t, time.Second, own.HTTP2.SendPingTimeout, "the original unchanged")
}
