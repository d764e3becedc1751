package pace_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/realserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests against a real nginx limit_req
// (https://nginx.org/en/docs/http/ngx_http_limit_req_module.html), counted
// from nginx's own access log: a pacer set to exactly the server's limit
// must meet no 429, and must not be slower than the limit allows. nginx is
// a leaky bucket on a millisecond clock; with no burst an admitted request
// must come at least 1/rate after the last admitted one (DESIGN.md,
// "Spacing where the server counts it").

// excessRe matches limit_req's error-log line for a refusal; the excess is
// in requests, so 0.010 at 10r/s means the request came 99 ms after the
// last admitted one on nginx's own clock.
var excessRe = regexp.MustCompile(`limiting requests, excess: ([0-9.]+) by zone`)

func excessValues(ms [][]string) []string {
	var v []string
	for _, m := range ms {
		v = append(v, m[1])
	}
	return v
}

// nginxRun is what one run against nginx measured.
type nginxRun struct {
	elapsed  time.Duration // first request sent to last response read, client's clock
	statuses map[int]int   // from nginx's access log
	gaps     []time.Duration
	errs     int64 // client-side errors
}

// runAgainstNginx sends n GETs from workers goroutines through a
// pace.Transport holding lim for nginx's host, over a fresh http.Transport
// (so every connection is new), within 30 s, then stops nginx and reads its
// access log. interval is lim's 1/rate, for the log line on short gaps.
func runAgainstNginx(t *testing.T, conf realserver.NginxConf, lim pace.Limit, interval time.Duration, n, workers int) nginxRun {
	t.Helper()
	ng := realserver.StartNginx(t, conf)
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: &pace.Transport{
		Base:   base,
		Limits: pace.Hosts{ng.Host(): {Limit: lim}},
	}}
	start := time.Now()
	errs := getAll(t, client, ng.URL()+"/", n, workers)
	r := nginxRun{elapsed: time.Since(start), errs: errs}

	base.CloseIdleConnections()
	require.NoError(t, ng.Stop()) // after Stop the access log is complete
	r.statuses = ng.Statuses()
	excess := excessRe.FindAllStringSubmatch(ng.ErrorLog(), -1) // one per refusal
	es, err := ng.Entries()
	require.NoError(t, err)
	r.gaps = realserver.Gaps(es, http.StatusOK)
	first429 := -1 // 200s in the log before the first 429
	for i, e := range es {
		if e.Status == http.StatusTooManyRequests {
			first429 = i
			break
		}
	}
	minGap := time.Duration(-1)
	if len(r.gaps) > 0 {
		minGap = slices.Min(r.gaps)
	}
	short := 0
	for _, g := range r.gaps {
		if g < interval {
			short++
		}
	}
	t.Logf("nginx %+v: %d requests, %d workers: elapsed %v, statuses %v, client errors %d, "+
		"first 429 at log line %d, limit_req excess at refusals %v, min gap between 200s %v (nginx $msec), %d of %d gaps under %v",
		conf, n, workers, r.elapsed.Round(time.Millisecond), r.statuses, r.errs, first429, excessValues(excess), minGap, short, len(r.gaps), interval)
	return r
}

func TestNginxLimitReqNoBurst(t *testing.T) {
	const (
		n       = 50
		workers = 4
		rate    = 10
	)
	r := runAgainstNginx(t, realserver.NginxConf{Rate: "10r/s"},
		pace.LeakyBucket(pace.PerSecond(rate), pace.LeakyOptions{Queue: 100}), time.Second/rate, n, workers)

	assert.Zero(t, r.statuses[http.StatusTooManyRequests], "429s in nginx's access log")
	assert.Equal(t, n, r.statuses[http.StatusOK], "200s in nginx's access log")
	assert.Zero(t, r.errs, "client errors")
	// The target was 1.02 × (n−1)/rate = 4.998 s. pace reaches about
	// 1.018 × (4.99 s): each gap is the interval plus the departure margin
	// (1.5 ms to start with) plus the time the request takes to reach the
	// wire; the last millisecond of each wait yields instead of sleeping on
	// a timer that may wake a millisecond late. The bound is 1.03 ×
	// (5.047 s).
	maxElapsed := time.Duration(n-1) * time.Second / rate * 103 / 100
	assert.LessOrEqual(t, r.elapsed, maxElapsed, "elapsed")
}

// TestNginxLimitReqNoBurstSeries is TestNginxLimitReqNoBurst 20 times in a
// row, each with a new Transport (a new process, as a user runs it), while
// another goroutine keeps a core busy. nginx stamps an arrival when its
// worker gets to it, so a request written more than one interval after the
// last one may still look early and meet a 429: the key's margin, and the
// late answers of requests nginx got to late, keep that rare. The targets
// (at most one 429 in any run, none in at least 17 of the 20, runs without
// a 429 within 1.03 × ideal) are timing figures: each run is logged, and
// docs/pacing.md reports them. The test bounds them generously, as a test
// against a real server on a shared machine must: at most 3 × 429 in any
// run and none in at least 15, counted in nginx's log, and 1.10 × ideal.
// It runs once in CI (about 100 s).
func TestNginxLimitReqNoBurstSeries(t *testing.T) {
	const (
		runs    = 20
		n       = 50
		workers = 4
		rate    = 10
	)
	var stop atomic.Bool
	var busy sync.WaitGroup
	busy.Go(func() { // the machine's other core, kept busy
		for x := 0; !stop.Load(); x++ {
			_ = x * x
		}
	})
	defer func() { stop.Store(true); busy.Wait() }()

	ideal := time.Duration(n-1) * time.Second / rate
	clean := 0
	for i := range runs {
		r := runAgainstNginx(t, realserver.NginxConf{Rate: "10r/s"},
			pace.LeakyBucket(pace.PerSecond(rate), pace.LeakyOptions{Queue: 100}), time.Second/rate, n, workers)
		refused := r.statuses[http.StatusTooManyRequests]
		t.Logf("run %2d: load %s, %d × 429, %.3f × ideal", i+1, loadAverage(), refused, float64(r.elapsed)/float64(ideal))
		assert.LessOrEqual(t, refused, 3, "run %d: 429s in nginx's access log", i+1)
		assert.Equal(t, n, r.statuses[http.StatusOK], "run %d: 200s in nginx's access log", i+1)
		assert.Zero(t, r.errs, "run %d: client errors", i+1)
		if refused == 0 {
			clean++
			assert.LessOrEqual(t, r.elapsed, ideal*110/100, "run %d: elapsed", i+1)
		}
	}
	assert.GreaterOrEqual(t, clean, 15, "runs without a 429")
}

// loadAverage returns the 1-minute load average, or "?".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

func TestNginxLimitReqBurstNodelay(t *testing.T) {
	const (
		n       = 100
		workers = 8
		rate    = 10
		burst   = 5
	)
	r := runAgainstNginx(t, realserver.NginxConf{Rate: "10r/s", Burst: burst, NoDelay: true},
		pace.LeakyBucket(pace.PerSecond(rate), pace.LeakyOptions{Slack: burst, Queue: 200}), time.Second/rate, n, workers)

	assert.Zero(t, r.statuses[http.StatusTooManyRequests], "429s in nginx's access log")
	assert.Equal(t, n, r.statuses[http.StatusOK], "200s in nginx's access log")
	assert.Zero(t, r.errs, "client errors")
	maxElapsed := time.Duration(n-burst) * time.Second / rate * 102 / 100 // 1.02 × (n−burst)/rate = 9.69s
	assert.LessOrEqual(t, r.elapsed, maxElapsed, "elapsed")
}

// getAll sends n GETs of url through client from workers goroutines, within
// 30 s, reading each body, and returns how many failed (the first failure
// is reported).
func getAll(t *testing.T, client *http.Client, url string, n, workers int) (errs int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	jobs := make(chan int, n)
	for i := range n {
		jobs <- i
	}
	close(jobs)
	var (
		wg      sync.WaitGroup
		failed  atomic.Int64
		errOnce sync.Once
	)
	for range workers {
		wg.Go(func() {
			for range jobs {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
				if err == nil {
					var resp *http.Response
					if resp, err = client.Do(req); err == nil {
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						continue
					}
				}
				failed.Add(1)
				errOnce.Do(func() { t.Errorf("GET: %v", err) })
			}
		})
	}
	wg.Wait()
	return failed.Load()
}
