package metrics

import (
	"context"
	"net/http"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/pacehttp/pace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// point is one data point read back: its attributes and value.
type point struct {
	attrs attribute.Set
	value float64 // a sum's or gauge's value, a histogram's count
	sum   float64 // a histogram's sum
}

// collect reads every metric of the reader, by name.
func collect(t *testing.T, r *sdkmetric.ManualReader) map[string][]point {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.Collect(context.Background(), &rm))
	out := make(map[string][]point)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out[m.Name] = append(out[m.Name], point{attrs: p.Attributes, value: float64(p.Value)})
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					out[m.Name] = append(out[m.Name], point{attrs: p.Attributes, value: p.Value})
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out[m.Name] = append(out[m.Name], point{attrs: p.Attributes, value: float64(p.Count), sum: p.Sum})
				}
			}
		}
	}
	return out
}

// valueAt returns the value of the point whose server.address is host.
func valueAt(ps []point, host string) (point, bool) {
	for _, p := range ps {
		if v, ok := p.attrs.Value("server.address"); ok && v.AsString() == host {
			return p, true
		}
	}
	return point{}, false
}

// TestInstrument runs a Transport through a throttle, a retry and a wait,
// collects with the SDK's manual reader, and checks every instrument; a
// second host past MaxHosts is folded into "_OTHER", and an OnEvent set
// before Instrument still hears every event.
func TestInstrument(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int64
		base := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			h := http.Header{}
			code := http.StatusOK
			if r.URL.Host == "api.test" && n.Add(1) == 1 {
				code = http.StatusTooManyRequests
				h.Set("Retry-After", "2")
			}
			return &http.Response{StatusCode: code, Header: h, Body: http.NoBody, Request: r}, nil
		})
		var events atomic.Int64
		tr := &pace.Transport{Base: base, Limits: pace.Hosts{"*": {Limit: pace.TokenBucket(pace.PerSecond(2), 1)}},
			OnEvent: func(pace.Event) { events.Add(1) }}
		reader := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		defer mp.Shutdown(context.Background())
		m, err := Instrument(tr, Options{MeterProvider: mp, MaxHosts: 1})
		require.NoError(t, err)
		for _, u := range []string{"http://api.test/", "http://api.test/", "http://other.test:8080/"} {
			req, _ := http.NewRequest("GET", u, nil)
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			resp.Body.Close()
		}
		got := collect(t, reader)
		for name, want := range map[string]float64{
			"pace.client.requests": 2, "pace.client.attempts": 3, "pace.client.retries": 1,
			"pace.client.throttles": 1, "pace.client.give_ups": 0,
		} {
			p, ok := valueAt(got[name], "api.test")
			if assert.True(t, ok, name) {
				assert.Equal(t, want, p.value, name)
			}
		}
		p, ok := valueAt(got["pace.client.requests"], "_OTHER")
		require.True(t, ok, "the second host is folded into _OTHER")
		assert.Equal(t, float64(1), p.value)
		_, hasPort := p.attrs.Value("server.port")
		assert.False(t, hasPort)
		// The pace in force: the configured token bucket, 0.5 s.
		p, ok = valueAt(got["pace.client.pace"], "api.test")
		require.True(t, ok)
		assert.Equal(t, 0.5, p.value)
		src, _ := p.attrs.Value("pace.source")
		assert.Equal(t, "configured", src.AsString())
		// The retry waited the server's 2 s; the second call waited 0.5 s
		// for the token bucket.
		p, ok = valueAt(got["pace.client.retry_delay"], "api.test")
		require.True(t, ok)
		assert.Equal(t, float64(1), p.value)
		assert.Equal(t, 2.0, p.sum)
		p, ok = valueAt(got["pace.client.wait.duration"], "api.test")
		require.True(t, ok)
		assert.Equal(t, float64(1), p.value)
		assert.InDelta(t, 0.5, p.sum, 1e-9)
		assert.Equal(t, int64(3), events.Load(), "the throttle, the retry and the wait reach the earlier OnEvent")
		require.NoError(t, m.Close())
		require.NoError(t, m.Close())
		assert.Empty(t, collect(t, reader)["pace.client.requests"], "no counters after Close")
	})
}

// TestInstrumentRejectsInvalidConfig: a negative MaxHosts or a nil
// Transport is a *pace.ConfigError matching pace.ErrInvalidConfig, not a
// panic, as retryable.Install(nil, ...) is.
func TestInstrumentRejectsInvalidConfig(t *testing.T) {
	for _, tt := range []struct {
		name  string
		t     *pace.Transport
		o     Options
		field string
	}{
		{"negative MaxHosts", &pace.Transport{}, Options{MaxHosts: -1}, "MaxHosts"},
		{"nil Transport", nil, Options{}, "Transport"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var m *Metrics
			var err error
			require.NotPanics(t, func() { m, err = Instrument(tt.t, tt.o) })
			assert.Nil(t, m)
			require.ErrorIs(t, err, pace.ErrInvalidConfig)
			var ce *pace.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tt.field, ce.Field)
		})
	}
}

// TestModuleVersion: the scope's version is the module's, as the build
// information records it: as a dependency, replaced by another version,
// or the main module; none for a development build, a replacement by a
// directory, or a binary without the module.
func TestModuleVersion(t *testing.T) {
	dep := func(m debug.Module) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Path: "example.com/app", Version: "(devel)"}, Deps: []*debug.Module{
			{Path: "github.com/pacehttp/pace", Version: "v1.0.0"}, &m}}
	}
	for _, tt := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"a dependency", dep(debug.Module{Path: scopeName, Version: "v0.4.1"}), "v0.4.1"},
		{"replaced by a version", dep(debug.Module{Path: scopeName, Version: "v0.4.1",
			Replace: &debug.Module{Path: "example.com/fork/metrics", Version: "v0.4.2-fork"}}), "v0.4.2-fork"},
		{"replaced by a directory", dep(debug.Module{Path: scopeName, Version: "v0.0.0-00010101000000-000000000000",
			Replace: &debug.Module{Path: "../metrics"}}), ""},
		{"the main module", &debug.BuildInfo{Main: debug.Module{Path: scopeName, Version: "v0.5.0"}}, "v0.5.0"},
		{"a development build", &debug.BuildInfo{Main: debug.Module{Path: scopeName, Version: "(devel)"}}, ""},
		{"absent", dep(debug.Module{Path: "example.com/other", Version: "v1.2.3"}), ""},
		{"no build information", nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, moduleVersion(tt.bi, scopeName))
		})
	}
}

// TestServerAddressOneFormPerHost: the spellings of one host (case, a
// trailing dot, Unicode or punycode, port 443, RFC 3986 §3.2.2 and UTS #46)
// give one server.address in every instrument, the histograms as the
// counters, since both take the host in the form pace.Hosts matches it.
func TestServerAddressOneFormPerHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int64
		base := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			h := http.Header{}
			code := http.StatusOK
			if n.Add(1)%2 == 1 { // every request's first attempt
				code = http.StatusTooManyRequests
				h.Set("Retry-After", "1")
			}
			return &http.Response{StatusCode: code, Header: h, Body: http.NoBody, Request: r}, nil
		})
		tr := &pace.Transport{Base: base, Limits: pace.Hosts{"*": {Limit: pace.TokenBucket(pace.PerSecond(2), 1)}}}
		reader := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		defer mp.Shutdown(context.Background())
		m, err := Instrument(tr, Options{MeterProvider: mp})
		require.NoError(t, err)
		defer m.Close()
		spellings := []string{"http://äpi.example/", "http://ÄPI.example./", "http://xn--pi-uia.example/", "http://XN--PI-UIA.example:443/"}
		for _, u := range spellings {
			req, err := http.NewRequest("GET", u, nil)
			require.NoError(t, err)
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			resp.Body.Close()
		}
		got := collect(t, reader)
		for _, name := range []string{"pace.client.requests", "pace.client.attempts", "pace.client.retries",
			"pace.client.throttles", "pace.client.retry_delay", "pace.client.wait.duration"} {
			seen := map[string]bool{}
			for _, p := range got[name] {
				v, _ := p.attrs.Value("server.address")
				seen[v.AsString()] = true
				_, hasPort := p.attrs.Value("server.port")
				assert.False(t, hasPort, name)
			}
			assert.Equal(t, map[string]bool{"xn--pi-uia.example": true}, seen, name)
		}
		p, ok := valueAt(got["pace.client.retry_delay"], "xn--pi-uia.example")
		require.True(t, ok)
		assert.Equal(t, float64(len(spellings)), p.value, "one retry per request, all under one host")
	})
}
