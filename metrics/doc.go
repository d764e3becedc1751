// Package metrics reports what a [pace.Transport] does through the
// OpenTelemetry metric API (go.opentelemetry.io/otel/metric), per server.
//
// [Instrument] hooks a Transport before its first use. The counters are
// read from [pace.Transport.Stats] when the SDK collects, so nothing is
// recorded on the request path. The histograms are recorded from the
// Transport's events ([pace.Transport].OnEvent). Names follow the
// OpenTelemetry HTTP client conventions, with durations in seconds. Retries
// follow gRFC A96 ("retries", "retry_delay"):
//
//	pace.client.requests        counter    {request}   RoundTrip calls
//	pace.client.attempts        counter    {attempt}   attempts the limiter let go
//	pace.client.retries         counter    {retry}     attempts sent again
//	pace.client.throttles       counter    {throttle}  answers that paused the key (see pace.Throttled)
//	pace.client.give_ups        counter    {call}      calls that ended on a retryable failure not retried
//	pace.client.pace            gauge      s           spacing in force (pace.source: configured, quota)
//	pace.client.wait.duration   histogram  s           wait for the key's pause or limit (pace.wait.reason)
//	pace.client.retry_delay     histogram  s           wait before a retry (pace.retry.reason)
//
// give_ups is [pace.Stats].GiveUps. A Transport with MaxAttempts 1 counts no
// give-up for running out of attempts.
//
// A server may count more requests than pace.client.attempts. net/http
// resends a replayable request by itself when a reused connection dies
// before the answer, and pace does not see it. A server counts fewer when
// an attempt never reached it.
//
// server.address is the host in the form [pace.Hosts] matches it, so every
// spelling of a host is one value. It takes at most [Options].MaxHosts
// values; later hosts are "_OTHER". So are the counters of keys past the
// Transport's bound on the keys it keeps Stats of: those keys share one
// entry, whatever their hosts. An IPv6 address has no brackets. A key
// that is a secret never becomes an attribute: the host of its first
// request does.
//
// This package is a module of its own, so that OpenTelemetry never becomes
// a dependency of programs that import pace alone. docs/observability.md
// has the details.
package metrics
