package metrics_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/metrics"
)

// promServe instruments tr with OpenTelemetry's Prometheus exporter and
// serves its /metrics on a loopback server; it returns scrape, which reads
// a counter's value for one server.address, and fails the test if it is
// missing.
func promServe(t *testing.T, tr *pace.Transport) (scrape func(name string) float64) {
	t.Helper()
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	require.NoError(t, err)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	t.Cleanup(func() { assert.NoError(t, mp.Shutdown(context.Background())) })
	m, err := metrics.Instrument(tr, metrics.Options{MeterProvider: mp})
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	return func(name string) float64 {
		t.Helper()
		resp, err := http.Get(srv.URL + "/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		p := expfmt.NewTextParser(model.UTF8Validation)
		families, err := p.TextToMetricFamilies(resp.Body)
		require.NoError(t, err)
		f, ok := families[name]
		require.True(t, ok, "no %s in the scrape", name)
		var sum float64
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "server_address" && l.GetValue() == "127.0.0.1" {
					sum += m.GetCounter().GetValue()
				}
			}
		}
		return sum
	}
}

// TestPrometheusScrape: after a short run against a loopback API, the
// counters scraped from /metrics agree with what the API counted. The API
// answers the first attempt of every third call with a 429 (Retry-After:
// 0, a throttle) and of the next with a 503 (no delay: a retry, no
// throttle).
func TestPrometheusScrape(t *testing.T) {
	const calls, workers = 30, 4
	var mu sync.Mutex
	seen := map[string]int{} // path -> attempts the API received
	var received, throttled, unavailable int
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path]++
		first := seen[r.URL.Path] == 1
		received++
		i, _ := strconv.Atoi(r.URL.Path[1:])
		switch {
		case first && i%3 == 0:
			throttled++
			mu.Unlock()
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
		case first && i%3 == 1:
			unavailable++
			mu.Unlock()
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			mu.Unlock()
		}
	}))
	t.Cleanup(api.Close)
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	tr := &pace.Transport{Base: base}
	scrape := promServe(t, tr)

	client := &http.Client{Transport: tr}
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				resp, err := client.Get(api.URL + "/" + strconv.Itoa(i))
				if assert.NoError(t, err) {
					assert.Equal(t, http.StatusOK, resp.StatusCode)
					resp.Body.Close()
				}
			}
		})
	}
	for i := range calls {
		jobs <- i
	}
	close(jobs)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, calls, len(seen), "calls the API saw")
	assert.Equal(t, float64(calls), scrape("pace_client_requests_total"))
	assert.Equal(t, float64(received), scrape("pace_client_attempts_total"), "attempts: the API's count")
	assert.Equal(t, float64(throttled+unavailable), scrape("pace_client_retries_total"), "retries: the API's 429s and 503s")
	assert.Equal(t, float64(throttled), scrape("pace_client_throttles_total"), "throttles: the API's 429s")
	assert.Zero(t, scrape("pace_client_give_ups_total"))
}

// TestPrometheusAttemptsBelowServerCount: net/http replays a request by
// itself when a reused keep-alive connection dies before the answer, if
// the request is replayable (GET, HEAD, OPTIONS, TRACE, or an
// Idempotency-Key header: net/http's transport.go, shouldRetryRequest and
// isReplayable). pace sees one attempt; the server counts two.
func TestPrometheusAttemptsBelowServerCount(t *testing.T) {
	var mu sync.Mutex
	received := 0
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		received++
		n := received
		mu.Unlock()
		if n == 2 { // the second request, on the first's connection: close it unanswered
			conn, _, err := w.(http.Hijacker).Hijack()
			if assert.NoError(t, err) {
				conn.Close()
			}
		}
	}))
	t.Cleanup(api.Close)
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	tr := &pace.Transport{Base: base}
	scrape := promServe(t, tr)

	client := &http.Client{Transport: tr}
	for range 2 {
		resp, err := client.Get(api.URL)
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		resp.Body.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, 3, received, "the server: the dead connection's request and net/http's replay")
	assert.Equal(t, float64(2), scrape("pace_client_attempts_total"), "pace: one attempt per call")
	assert.Zero(t, scrape("pace_client_retries_total"))
}
