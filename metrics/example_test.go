package metrics_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync/atomic"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/metrics"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Example instruments a Transport whose Base is otelhttp's Transport, so
// that every attempt is a span under the caller's span, and reads one
// export of the metrics with the SDK's manual reader. The local server
// throttles the first request (503 with Retry-After: 0), so the call takes
// two attempts.
func Example() {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	}))
	defer srv.Close()

	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer tp.Shutdown(context.Background())
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())

	tr := &pace.Transport{Base: otelhttp.NewTransport(http.DefaultTransport, otelhttp.WithTracerProvider(tp))}
	defer tr.CloseIdleConnections()
	m, err := metrics.Instrument(tr, metrics.Options{MeterProvider: mp})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	client := &http.Client{Transport: tr}

	ctx, parent := tp.Tracer("example").Start(context.Background(), "sync-orders")
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/orders", nil)
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	parent.End()

	for _, s := range spans.GetSpans() {
		if s.Parent.SpanID() == parent.SpanContext().SpanID() {
			fmt.Printf("span %q under sync-orders\n", s.Name)
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		fmt.Println(err)
		return
	}
	var lines []string
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			switch d := mt.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					addr, _ := p.Attributes.Value("server.address")
					lines = append(lines, fmt.Sprintf("%s{server.address=%s} %d", mt.Name, addr.AsString(), p.Value))
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					lines = append(lines, fmt.Sprintf("%s count %d", mt.Name, p.Count))
				}
			}
		}
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// span "HTTP GET" under sync-orders
	// span "HTTP GET" under sync-orders
	// pace.client.attempts{server.address=127.0.0.1} 2
	// pace.client.give_ups{server.address=127.0.0.1} 0
	// pace.client.requests{server.address=127.0.0.1} 1
	// pace.client.retries{server.address=127.0.0.1} 1
	// pace.client.retry_delay count 1
	// pace.client.throttles{server.address=127.0.0.1} 1
}
