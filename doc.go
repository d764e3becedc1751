// Package pace keeps outbound HTTP calls within the rate limits of the APIs
// they call. It retries throttled or failed requests when that is safe.
//
// A [Transport] is an [http.RoundTripper] to put in an [http.Client]. Each
// attempt waits out its key's pause, then its key's limiter. The key is the
// request's host, unless [Transport].Key says otherwise. [Hosts] chooses
// the [Limit] for each host. A throttle (see [Throttled]) pauses the whole
// key, for the server's delay (see [RetryAfter]) or a default. A safe retry
// follows [Transport].Retry, a [retry.Policy]. The zero Transport is ready
// to use, and every zero field means a documented default:
//
//	client := &http.Client{Transport: &pace.Transport{
//		Limits: pace.Hosts{
//			"api.example.com": {Limit: pace.LeakyBucket(pace.PerSecond(10), pace.LeakyOptions{Queue: 100})},
//			pace.DefaultHost:  {Limit: pace.TokenBucket(pace.PerMinute(600), 20)}, // bursts of 20
//		},
//	}}
//
// A [Limit] describes one rate limit and holds no state. Its constructors
// are [TokenBucket], [LeakyBucket], [FixedWindow], [SlidingLog],
// [SlidingCounter], and [All] for several at once. A [Shaper] applies a
// Limit to one stream, with explicit time. [Keyed] applies it per key.
//
// RoundTrip returns a response or an error, never both. Its errors:
//
//   - a [*ConfigError], matching [ErrInvalidConfig]: nothing was sent.
//   - a [*WaitError]: the first attempt's wait was refused or cut short.
//   - an [*AttemptsError]: attempts were sent, and no response is returned.
//   - the error of [Transport].PrepareAttempt on the first attempt.
//   - an error reading a body pace buffers, or a nil request or URL.
//
// [errors.Is] and [errors.As] see through the [*net/url.Error] of [http.Client].
// A Transport, the limiters and a Keyed are safe for concurrent use.
//
// Package batch runs jobs; redislimit shares limits through Redis;
// middleware limits a server. Modules retryable and metrics adapt
// go-retryablehttp clients and report to OpenTelemetry. docs/pacing.md
// explains how pacing works.
package pace
