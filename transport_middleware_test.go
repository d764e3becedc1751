package pace_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/middleware"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTransportAtExactLimitOfSlidingLogServer: a server that admits at most
// N requests in any 1 s, counted by an exact sliding log at arrival
// (package middleware), and a client whose limit is exactly the same
// (pace.SlidingLog(PerSecond(N))): no request is refused, counted at the
// server. The client's log counts a request where it actually left (a late
// departure moves its entry, see Transport, "Spacing"); without that, a
// request delayed on its way lets the N+1st of a window arrive less than a
// second after the first.
func TestTransportAtExactLimitOfSlidingLogServer(t *testing.T) {
	const n, calls, workers = 10, 60, 4
	m, err := middleware.New(middleware.Options{Limit: pace.SlidingLog(pace.PerSecond(n))})
	require.NoError(t, err)
	var ok, refused atomic.Int64
	srv := httptest.NewServer(m.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ok.Add(1) })))
	defer srv.Close()
	counting := &statusCounter{next: srv.Config.Handler}
	srv.Config.Handler = counting

	base := &http.Transport{}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: &pace.Transport{
		Base:   base,
		Limits: pace.Hosts{srv.Listener.Addr().String(): {Limit: pace.SlidingLog(pace.PerSecond(n))}},
	}}
	start := time.Now()
	errs := getAll(t, client, srv.URL, calls, workers)
	elapsed := time.Since(start)
	refused.Store(counting.count(http.StatusTooManyRequests))
	t.Logf("%d calls at exactly %d/s: %d admitted, %d refused by the server, %d client errors, elapsed %v",
		calls, n, ok.Load(), refused.Load(), errs, elapsed)
	for i, a := range counting.log {
		if a.code != 200 {
			t.Logf("refused #%d at %v; #%d at %v", i, a.at.Sub(start), i-n, counting.log[max(i-n, 0)].at.Sub(start))
		}
	}
	assert.Zero(t, refused.Load(), "429s counted by the server")
	assert.EqualValues(t, calls, ok.Load(), "requests the server admitted")
	assert.Zero(t, errs, "client errors")
}

// statusCounter counts the statuses a handler answers with.
type statusCounter struct {
	next http.Handler
	mu   sync.Mutex
	by   map[int]int64
	log  []arrival
}

type arrival struct {
	at   time.Time
	code int
}

func (s *statusCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
	s.next.ServeHTTP(rec, r)
	s.mu.Lock()
	if s.by == nil {
		s.by = make(map[int]int64)
	}
	s.by[rec.code]++
	s.log = append(s.log, arrival{time.Now(), rec.code})
	s.mu.Unlock()
}

func (s *statusCounter) count(code int) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.by[code]
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}
