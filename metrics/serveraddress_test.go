package metrics

import (
	"context"
	"net/http"
	"strconv"
	"testing"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// okBase answers every request 200.
var okBase = roundTripperFunc(func(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
})

// instrumented returns a Transport on okBase with key, instrumented, and
// the reader of its metrics.
func instrumented(t *testing.T, key func(*http.Request) string) (*pace.Transport, *sdkmetric.ManualReader) {
	t.Helper()
	tr := &pace.Transport{Base: okBase, Retry: retry.Policy{MaxAttempts: 1}, Key: key}
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	m, err := Instrument(tr, Options{MeterProvider: mp})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	return tr, reader
}

// TestServerAddressPastKeyBound: keys past the 4,096 the Transport keeps
// Stats of share one entry, whatever their hosts; their counters are
// "_OTHER", never an empty server.address taking one of MaxHosts' slots
// (as a new user's trial found: {api.example: 4096, "": 4}).
func TestServerAddressPastKeyBound(t *testing.T) {
	tr, reader := instrumented(t, func(r *http.Request) string { return r.Header.Get("X-Api-Key") })
	for i := range 4100 {
		req, err := http.NewRequest(http.MethodGet, "https://api.example/v1", nil)
		require.NoError(t, err)
		req.Header.Set("X-Api-Key", "tenant-"+strconv.Itoa(i))
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
	}
	got := map[string]float64{}
	for _, p := range collect(t, reader)["pace.client.requests"] {
		v, _ := p.attrs.Value("server.address")
		got[v.AsString()] += p.value
	}
	assert.Equal(t, map[string]float64{"api.example": 4096, otherHost: 4}, got)
}

// TestServerAddressIPv6: an IPv6 host is one server.address without
// brackets (OpenTelemetry's server.address is the address), with or
// without a port. Before, "[2001:db8::1]" and "2001:db8::1" were two.
func TestServerAddressIPv6(t *testing.T) {
	tr, reader := instrumented(t, nil)
	for _, u := range []string{"https://[2001:db8::1]/", "http://[2001:db8::1]:8080/"} {
		req, err := http.NewRequest(http.MethodGet, u, nil)
		require.NoError(t, err)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
	}
	for name, ps := range collect(t, reader) {
		for _, p := range ps {
			v, _ := p.attrs.Value("server.address")
			assert.Equal(t, "2001:db8::1", v.AsString(), name)
		}
	}
}
