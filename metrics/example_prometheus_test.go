package metrics_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/metrics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// Example_prometheus serves a Transport's metrics on /metrics for
// Prometheus to scrape, through OpenTelemetry's Prometheus exporter. The
// local API throttles its first request (429 with Retry-After: 0), so
// three calls take four attempts. The example then scrapes /metrics once
// and prints pace's counters.
func Example_prometheus() {
	var n atomic.Int64
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		fmt.Fprintln(w, "ok")
	}))
	defer api.Close()

	// The exporter is a Reader of the MeterProvider; it registers with reg.
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		fmt.Println(err)
		return
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer mp.Shutdown(context.Background())

	tr := &pace.Transport{}
	defer tr.CloseIdleConnections()
	m, err := metrics.Instrument(tr, metrics.Options{MeterProvider: mp})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()

	// A program serves this mux with http.ListenAndServe(":9464", mux).
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	scrape := httptest.NewServer(mux)
	defer scrape.Close()

	client := &http.Client{Transport: tr}
	for range 3 {
		resp, err := client.Get(api.URL + "/orders")
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
	}

	resp, err := http.Get(scrape.URL + "/metrics")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		// A line: name{labels} value. The labels hold server_address,
		// server_port and the instrumentation scope.
		line := sc.Text()
		name, _, ok := strings.Cut(line, "{")
		if ok && strings.HasPrefix(name, "pace_client_") && strings.HasSuffix(name, "_total") {
			fmt.Println(name, line[strings.LastIndexByte(line, ' ')+1:])
		}
	}
	// Output:
	// pace_client_attempts_total 4
	// pace_client_give_ups_total 0
	// pace_client_requests_total 3
	// pace_client_retries_total 1
	// pace_client_throttles_total 1
}
