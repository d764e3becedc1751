// Package metrics reports what a [pace.Transport] does through the
// OpenTelemetry metric API (go.opentelemetry.io/otel/metric), so that
// operators see, per server, how many calls and attempts went out, how many
// were retried, throttled or given up, how long requests waited before
// leaving, and the pace in force.
//
// [Instrument] hooks a Transport before its first use. The counters are
// read from [pace.Transport.Stats] when the SDK collects (observable
// instruments, nothing recorded on the request path); the wait and retry
// delay histograms are recorded from the Transport's events
// ([pace.Transport].OnEvent). Names follow the OpenTelemetry HTTP client
// conventions (the attribute server.address, and server.port when the URL
// names one; durations in seconds) and, for retries, gRFC A96 ("retries",
// "retry_delay"):
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
// give_ups is [pace.Stats].GiveUps: a Transport with MaxAttempts 1 (as
// retryable.Install wants it, the client making the retries) makes no
// retries and counts no give-up for running out of attempts.
//
// A server may count more requests than pace.client.attempts: net/http
// resends a replayable request (GET, HEAD, OPTIONS, TRACE, or with an
// Idempotency-Key header) by itself when a reused connection dies before
// the answer, and pace does not see it. It counts fewer when an attempt
// never reached it, as on a refused connection.
//
// server.address is the host in the form [pace.Hosts] matches it: lower
// case, punycode, no trailing dot, no port 80 or 443. So every spelling of
// a host is one value, in the counters and the histograms alike.
//
// server.address takes at most [Options].MaxHosts values (the first hosts
// seen); later hosts are reported as "_OTHER", so that the cardinality of
// the attributes is bounded whatever hosts the program calls. Keys that are
// secrets (an API key from [pace.Transport].Key) never become attributes:
// the host of the key's first request does.
//
// This package is a module of its own, so that OpenTelemetry never becomes
// a dependency of programs that import pace alone.
package metrics
