package batch

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHTTPDrainsBodyAsTransportDoes: HTTP discards a body its check did not
// read as pace.Transport does (internal/retryrule, up to 64 KiB), so three
// answers with a 10 KiB body share one connection. When batch drained only
// 4 KiB of its own, each answer cost a new connection.
func TestHTTPDrainsBodyAsTransportDoes(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
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
	build := func(ctx context.Context, _ int) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	}
	rep, err := Run(t.Context(), ints(3), HTTP(&http.Client{Transport: tr}, build, nil), Options{Concurrency: 1})
	require.NoError(t, err)
	assert.Equal(t, 3, rep.Summary.Succeeded)
	assert.Equal(t, int64(1), conns.Load(), "connections for 3 answers")
}
