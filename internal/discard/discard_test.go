package discard

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// countingBody counts the bytes read from it and its closes.
type countingBody struct {
	r      io.Reader
	read   int64
	closed int
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.read += int64(n)
	return n, err
}

func (b *countingBody) Close() error { b.closed++; return nil }

func TestBody(t *testing.T) {
	tests := []struct {
		name     string
		size     int
		wantRead int64
	}{
		{"short body read to the end", 10, 10},
		{"10 KiB body read to the end", 10 << 10, 10 << 10},
		{"long body read only up to Max", 1 << 20, Max},
		{"empty", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := &countingBody{r: bytes.NewReader(make([]byte, tt.size))}
			Body(body)
			assert.Equal(t, tt.wantRead, body.read)
			assert.Equal(t, 1, body.closed)
		})
	}
	Body(nil) // must not panic
}

// TestCloseReusesConnection sends three requests to a server that answers
// 503 with a 10 KiB body. Drained with Body, the three share one
// connection; merely closed, each needs its own, which shows the test can
// tell the difference.
func TestBodyReusesConnection(t *testing.T) {
	for _, tc := range []struct {
		name      string
		discard   func(io.ReadCloser)
		wantConns int64
	}{
		{"drained", Body, 1},
		{"closed unread", func(b io.ReadCloser) { _ = b.Close() }, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var conns atomic.Int64
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write(bytes.Repeat([]byte("x"), 10<<10))
			}))
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns.Add(1)
				}
			}
			srv.Start()
			defer srv.Close()
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			for range 3 {
				req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
				require.NoError(t, err)
				resp, err := tr.RoundTrip(req)
				require.NoError(t, err)
				tc.discard(resp.Body)
			}
			assert.Equal(t, tc.wantConns, conns.Load())
		})
	}
}
