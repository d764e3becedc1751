package faulttest

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/batch"
)

// upstream is a payments-like API: it answers 503 Service Unavailable (no
// Retry-After) to a fifth of the requests it receives, and otherwise
// applies the request: a POST once per Idempotency-Key (a repeat gets the
// same answer, as Stripe's and the IETF draft's servers do), a GET as a
// read. It counts what it applied per item.
type upstream struct {
	mu      sync.Mutex
	rng     *rand.Rand
	applied map[string]int // POST item → times applied
	keys    map[string]string
	reads   map[string]int
	got     int // requests received
	refused int // 503s sent
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	item := strings.TrimPrefix(r.URL.Path, "/")
	u.mu.Lock()
	defer u.mu.Unlock()
	u.got++
	if u.rng.Float64() < 0.2 {
		u.refused++
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	switch key := r.Header.Get("Idempotency-Key"); {
	case r.Method == http.MethodGet:
		u.reads[item]++
	case key == "":
		u.applied[item]++
	default:
		if _, seen := u.keys[key]; !seen {
			u.keys[key] = item
			u.applied[item]++
		}
	}
	w.WriteHeader(http.StatusOK)
}

// deadlineWatch is the RoundTripper a test's http.Client uses above
// pace.Transport: it gives each call a deadline of its own, and records by
// how much each call that ended with an error ended past it.
type deadlineWatch struct {
	next    http.RoundTripper
	timeout time.Duration
	mu      sync.Mutex
	worst   time.Duration // latest end past a deadline
	late    int           // calls ended past their deadline
	calls   int
}

func (d *deadlineWatch) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(req.Context(), d.timeout)
	deadline, _ := ctx.Deadline()
	resp, err := d.next.RoundTrip(req.WithContext(ctx))
	over := time.Since(deadline)
	d.mu.Lock()
	d.calls++
	if over > 0 && err != nil {
		d.late++
		d.worst = max(d.worst, over)
	}
	d.mu.Unlock()
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error { err := c.ReadCloser.Close(); c.cancel(); return err }

// countAttempts counts the attempts pace.Transport makes, each a new
// connection (keep-alives off, so that toxiproxy's per-connection
// toxicity is a per-request one).
type countAttempts struct {
	next http.RoundTripper
	n    atomic.Int64
}

func (c *countAttempts) RoundTrip(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(req)
}

// TestFlakyUpstream: 1,000 items (500 GETs, 500 POSTs with batch.HTTP's
// derived Idempotency-Key) through pace.Transport with its defaults and
// batch.Run with its defaults but Concurrency (32, so that the run takes
// seconds: each 503 costs the default throttle backoff of about a second)
// against an upstream that answers 503 to 20% of requests, behind
// toxiproxy resetting 5% of connections (2.5% before the request reaches
// the upstream, 2.5% after the upstream applied it and answered) and
// holding 0.3% of responses for 3 s, past the calls' 1.5 s deadline. The
// issue's targets: at least 99.5% of items succeed, at most 1.4 attempts
// per item on average (counted below the Transport, so connections reset
// before reaching the upstream count too), no POST applied twice, every
// item accounted for, no goroutine left (goleak, TestMain), and no call
// ending more than 50 ms past its deadline.
func TestFlakyUpstream(t *testing.T) {
	const items = 1000
	// Runs last: toxiproxy's Proxy.Stop does not wait for its links, and a
	// response the latency toxic holds keeps its goroutines for up to 3 s
	// after it, longer than goleak's own retries in TestMain (about 2 s).
	defer waitNoGoroutines(t, 10*time.Second)
	u := &upstream{rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 5)),
		applied: map[string]int{}, keys: map[string]string{}, reads: map[string]int{}}
	srv := httptest.NewServer(u)
	defer srv.Close()

	proxy := startProxy(t, srv.Listener.Addr().String(),
		`{"name":"reset_before","type":"reset_peer","stream":"upstream","toxicity":0.025,"attributes":{"timeout":0}}`,
		`{"name":"reset_after","type":"reset_peer","stream":"downstream","toxicity":0.025,"attributes":{"timeout":0}}`,
		`{"name":"slow","type":"latency","stream":"downstream","toxicity":0.003,"attributes":{"latency":3000}}`,
	)
	defer proxy.Stop()

	base := &http.Transport{DisableKeepAlives: true, DialContext: (&net.Dialer{Timeout: time.Second}).DialContext}
	defer base.CloseIdleConnections()
	attempts := &countAttempts{next: base}
	var retries atomic.Int64
	tr := &pace.Transport{Base: attempts, OnEvent: func(e pace.Event) {
		if e.Kind == pace.EventRetry {
			retries.Add(1)
		}
	}}
	watch := &deadlineWatch{next: tr, timeout: 1500 * time.Millisecond}
	client := &http.Client{Transport: watch}
	build := func(ctx context.Context, i int) (*http.Request, error) {
		method := http.MethodGet
		if i%2 == 1 {
			method = http.MethodPost
		}
		return http.NewRequestWithContext(ctx, method, fmt.Sprintf("http://%s/%d", proxy.Listen, i), nil)
	}

	idx := make([]int, items)
	for i := range idx {
		idx[i] = i
	}
	start := time.Now()
	rep, err := batch.Run(t.Context(), idx, batch.HTTP(client, build, nil), batch.Options{Concurrency: 32})
	elapsed := time.Since(start)
	s := rep.Summary

	require.Len(t, rep.Results, items)
	twice := 0
	for i, res := range rep.Results {
		assert.Contains(t, []batch.Outcome{batch.Succeeded, batch.Failed}, res.Outcome, "item %d", i)
		if i%2 == 1 {
			n := u.applied[fmt.Sprint(i)]
			if n > 1 {
				twice++
			}
			if res.Outcome == batch.Succeeded {
				assert.Equal(t, 1, n, "POST %d succeeded: applied once", i)
			}
		}
	}
	rate := float64(s.Succeeded) / items
	perItem := float64(attempts.n.Load()) / items
	t.Logf("%d items in %v: %d succeeded (%.1f%%), %d failed, %d requeued; %d attempts (%.3f per item), %d Transport retries; "+
		"upstream got %d requests, sent %d 503s; POSTs applied twice: %d; calls %d, ended past their deadline %d, worst by %v; err %v",
		items, elapsed.Round(time.Millisecond), s.Succeeded, 100*rate, s.Failed, s.Requeued, attempts.n.Load(), perItem, retries.Load(),
		u.got, u.refused, twice, watch.calls, watch.late, watch.worst, err)
	assert.GreaterOrEqual(t, rate, 0.995, "success rate")
	assert.LessOrEqual(t, perItem, 1.4, "attempts per item")
	assert.Zero(t, twice, "POSTs applied twice")
	assert.Equal(t, items, s.Succeeded+s.Failed, "every item accounted for")
	assert.LessOrEqual(t, watch.worst, 50*time.Millisecond, "latest end past a deadline")
	client.CloseIdleConnections()
}

// startProxy starts an in-process toxiproxy on a free loopback port in
// front of upstream, with the given toxics (toxiproxy's JSON form).
func startProxy(t *testing.T, upstream string, toxics ...string) *toxiproxy.Proxy {
	t.Helper()
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	proxy := toxiproxy.NewProxy(server, "api", "127.0.0.1:0", upstream)
	require.NoError(t, proxy.Start())
	for _, tx := range toxics {
		_, err := proxy.Toxics.AddToxicJson(strings.NewReader(tx))
		require.NoError(t, err, tx)
	}
	return proxy
}

// waitNoGoroutines waits, up to limit, until goleak finds no goroutine
// beyond the test's own, and reports what is left then.
func waitNoGoroutines(t *testing.T, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		err := goleak.Find()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("goroutines left %v after the proxy stopped: %v", limit, err)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
