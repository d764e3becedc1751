package retryable

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// server is an httptest server whose handler answers the n-th request
// (from 1) with respond's status and headers, and logs when each request
// arrived, by the server's own clock.
type server struct {
	*httptest.Server
	mu       sync.Mutex
	arrivals []time.Time
}

func newServer(t *testing.T, respond func(n int, h http.Header) int) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		s.arrivals = append(s.arrivals, time.Now())
		n := len(s.arrivals)
		s.mu.Unlock()
		w.WriteHeader(respond(n, w.Header()))
	}))
	t.Cleanup(s.Close)
	return s
}

// log returns the arrivals so far, in order.
func (s *server) log() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := slices.Clone(s.arrivals)
	slices.SortFunc(a, time.Time.Compare)
	return a
}

// newClient returns a retryablehttp.Client with no logger, the given
// retries and waits, and an http.Transport of its own, whose idle
// connections are closed when the test ends (for goleak).
func newClient(t *testing.T, retries int, waitMin, waitMax time.Duration) (*retryablehttp.Client, *http.Transport) {
	t.Helper()
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	c := retryablehttp.NewClient()
	c.Logger = nil
	c.RetryMax, c.RetryWaitMin, c.RetryWaitMax = retries, waitMin, waitMax
	c.HTTPClient = &http.Client{Transport: base}
	return c, base
}
