package metrics

import (
	"context"
	"net"
	"runtime/debug"
	"strconv"
	"sync"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/hostkey"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// DefaultMaxHosts is the number of server.address values reported when
// [Options].MaxHosts is 0.
const DefaultMaxHosts = 100

// otherHost is the server.address of the hosts past MaxHosts, as the
// OpenTelemetry semantic conventions name a value folded for cardinality
// ("_OTHER").
const otherHost = "_OTHER"

// Options configures [Instrument]. The zero value gives the defaults.
type Options struct {
	// MeterProvider supplies the Meter. Nil means the global one
	// (otel.GetMeterProvider).
	MeterProvider metric.MeterProvider

	// MaxHosts caps the server.address values reported; later hosts are
	// reported together as "_OTHER". Zero means DefaultMaxHosts; a
	// negative value is an error.
	MaxHosts int
}

// Metrics is the reporting of one Transport. Close stops it.
type Metrics struct {
	hosts  hostSet
	wait   metric.Float64Histogram
	delay  metric.Float64Histogram
	ctrs   []metric.Int64ObservableCounter // one per counters entry
	gauge  metric.Float64ObservableGauge
	reg    metric.Registration
	chain  func(pace.Event)
	t      *pace.Transport
	closed sync.Once
}

// Instrument makes t report through OpenTelemetry, as the package
// documentation lists. It must be called before t's first use, since it
// sets t.OnEvent (an OnEvent already set is still called, first). It
// returns a [*pace.ConfigError] (matching [pace.ErrInvalidConfig]) for a
// nil t or a negative MaxHosts, and the Meter's error when it refuses an
// instrument. The Meter's instrumentation scope is this package's import
// path, with the module's version as the binary's build information
// records it (runtime/debug.ReadBuildInfo; none for a development build
// or a replaced module). The returned Metrics is safe for concurrent use.
func Instrument(t *pace.Transport, o Options) (*Metrics, error) {
	switch {
	case t == nil:
		return nil, &pace.ConfigError{Field: "Transport", Reason: "nil"}
	case o.MaxHosts < 0:
		return nil, &pace.ConfigError{Field: "MaxHosts", Value: o.MaxHosts, Reason: "must not be negative"}
	}
	maxHosts := o.MaxHosts
	if maxHosts == 0 {
		maxHosts = DefaultMaxHosts
	}
	m := &Metrics{hosts: hostSet{max: maxHosts, seen: make(map[string]bool)}, chain: t.OnEvent, t: t}
	if err := m.instruments(newMeter(o.MeterProvider)); err != nil {
		return nil, err
	}
	t.OnEvent = m.onEvent
	return m, nil
}

// newMeter returns the Meter of mp (nil: the global MeterProvider) under
// this package's scope.
func newMeter(mp metric.MeterProvider) metric.Meter {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	var scope []metric.MeterOption
	if v := scopeVersion(); v != "" {
		scope = append(scope, metric.WithInstrumentationVersion(v))
	}
	return mp.Meter(scopeName, scope...)
}

// counters are the counters Metrics observes from pace.Stats.
var counters = []struct {
	name, unit, desc string
	value            func(pace.Stats) int64
}{
	{"pace.client.requests", "{request}", "RoundTrip calls.", func(s pace.Stats) int64 { return s.Requests }},
	{"pace.client.attempts", "{attempt}", "Attempts the key's limiter let go, retries included.", func(s pace.Stats) int64 { return s.Admitted }},
	{"pace.client.retries", "{retry}", "Attempts sent again (gRFC A96 retries).", func(s pace.Stats) int64 { return s.Retries }},
	{"pace.client.throttles", "{throttle}", "Answers that paused their key (see pace.Throttled).", func(s pace.Stats) int64 { return s.Throttles }},
	{"pace.client.give_ups", "{call}", "Calls that ended on a failure the Transport could have retried but did not (none for running out of attempts with MaxAttempts 1).", func(s pace.Stats) int64 { return s.GiveUps }},
}

// instruments makes m's instruments on meter and registers the callback
// that observes the counters and the pace gauge.
func (m *Metrics) instruments(meter metric.Meter) error {
	var err error
	buckets := metric.WithExplicitBucketBoundaries(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)
	if m.wait, err = meter.Float64Histogram("pace.client.wait.duration", metric.WithUnit("s"), buckets,
		metric.WithDescription("How long requests waited for their key's pause or limit before an attempt.")); err != nil {
		return err
	}
	if m.delay, err = meter.Float64Histogram("pace.client.retry_delay", metric.WithUnit("s"), buckets,
		metric.WithDescription("How long the Transport waited before sending an attempt again (gRFC A96 retry_delay).")); err != nil {
		return err
	}
	obs := make([]metric.Observable, 0, len(counters)+1)
	m.ctrs = make([]metric.Int64ObservableCounter, len(counters))
	for i, c := range counters {
		if m.ctrs[i], err = meter.Int64ObservableCounter(c.name, metric.WithUnit(c.unit), metric.WithDescription(c.desc)); err != nil {
			return err
		}
		obs = append(obs, m.ctrs[i])
	}
	if m.gauge, err = meter.Float64ObservableGauge("pace.client.pace", metric.WithUnit("s"),
		metric.WithDescription("The spacing between a server's requests in force now: the slowest of its keys.")); err != nil {
		return err
	}
	m.reg, err = meter.RegisterCallback(m.observe, append(obs, m.gauge)...)
	return err
}

// observe reports the Transport's Stats, summed per server.address: the
// counters, and the slowest pace of the server's keys.
func (m *Metrics) observe(_ context.Context, ob metric.Observer) error {
	type paceOf struct {
		seconds float64
		source  string
	}
	sums := make(map[string][]int64)
	paces := make(map[string]paceOf)
	for _, s := range m.t.Stats() {
		host := otherHost // the entry keys past the Transport's bound share, whatever their hosts
		if s.Host != "" {
			host = m.hosts.fold(s.Host)
		}
		v := sums[host]
		if v == nil {
			v = make([]int64, len(counters))
			sums[host] = v
		}
		for i, c := range counters {
			v[i] += c.value(s)
		}
		if sec := s.Pace.Seconds(); s.Pace > 0 && sec > paces[host].seconds {
			paces[host] = paceOf{sec, s.PaceSource}
		}
	}
	for host, v := range sums {
		kvs := hostAttrs(host)
		attrs := metric.WithAttributes(kvs...)
		for i := range counters {
			ob.ObserveInt64(m.ctrs[i], v[i], attrs)
		}
		if p, ok := paces[host]; ok {
			ob.ObserveFloat64(m.gauge, p.seconds, metric.WithAttributes(append(kvs, attribute.String("pace.source", p.source))...))
		}
	}
	return nil
}

// scopeName is the Meter's instrumentation scope: this package's import
// path, as the OpenTelemetry specification asks of instrumentation
// libraries.
const scopeName = "github.com/pacehttp/pace/metrics"

// scopeVersion is the version of this module in the running binary, read
// once from its build information, or "".
var scopeVersion = sync.OnceValue(func() string {
	bi, _ := debug.ReadBuildInfo()
	return moduleVersion(bi, scopeName)
})

// moduleVersion returns the version bi records for the module path: the
// main module's or a dependency's, the replacement's when it is replaced.
// It is "" when bi is nil, the module is absent, or it has no version (a
// "(devel)" build or a replacement by a directory).
func moduleVersion(bi *debug.BuildInfo, path string) string {
	if bi == nil {
		return ""
	}
	m := &bi.Main
	if m.Path != path {
		m = nil
		for _, d := range bi.Deps {
			if d.Path == path {
				m = d
				break
			}
		}
	}
	if m == nil {
		return ""
	}
	if m.Replace != nil {
		m = m.Replace
	}
	if m.Version == "(devel)" {
		return ""
	}
	return m.Version
}

// onEvent records the histograms and passes ev on to the OnEvent that was
// set before Instrument.
func (m *Metrics) onEvent(ev pace.Event) {
	if m.chain != nil {
		m.chain(ev)
	}
	var h metric.Float64Histogram
	var reason string
	switch ev.Kind {
	case pace.EventWait:
		h, reason = m.wait, "pace.wait.reason"
	case pace.EventRetry:
		h, reason = m.delay, "pace.retry.reason"
	default:
		return
	}
	host := ""
	if ev.Request != nil {
		host = hostkey.Request(ev.Request) // the form of pace.Stats.Host, which the counters report
	}
	attrs := append(hostAttrs(m.hosts.fold(host)), attribute.String(reason, string(ev.Reason)))
	ctx := context.Background()
	if ev.Request != nil {
		ctx = ev.Request.Context()
	}
	h.Record(ctx, ev.Delay.Seconds(), metric.WithAttributes(attrs...))
}

// Close stops the counters' collection; the histograms keep recording
// while the Transport runs (its OnEvent stays set). It returns the Meter's
// error, if any, and is safe to call more than once.
func (m *Metrics) Close() error {
	var err error
	m.closed.Do(func() { err = m.reg.Unregister() })
	return err
}

// hostAttrs returns the attributes of host ("name", "name:port", "[ip6]"
// or "[ip6]:port"): server.address, an IPv6 address without its brackets
// as the OpenTelemetry conventions spell it, and server.port when it has
// one.
func hostAttrs(host string) []attribute.KeyValue {
	name, port, err := net.SplitHostPort(host)
	if err != nil {
		if len(host) > 2 && host[0] == '[' && host[len(host)-1] == ']' {
			host = host[1 : len(host)-1]
		}
		return []attribute.KeyValue{attribute.String("server.address", host)}
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return []attribute.KeyValue{attribute.String("server.address", name)}
	}
	return []attribute.KeyValue{attribute.String("server.address", name), attribute.Int("server.port", p)}
}

// hostSet bounds the server.address values: the first max hosts seen are
// themselves, the rest "_OTHER".
type hostSet struct {
	mu   sync.Mutex
	max  int
	seen map[string]bool
}

// fold returns host, or "_OTHER" once max other hosts have been seen.
func (h *hostSet) fold(host string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.seen[host] {
		return host
	}
	if len(h.seen) >= h.max {
		return otherHost
	}
	h.seen[host] = true
	return host
}
