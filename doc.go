// Package pace keeps outbound HTTP calls within the rate limits of the APIs
// they call, and retries throttled or failed requests when that is safe.
//
// # Transport
//
// A [Transport] is an [http.RoundTripper] to put in an [http.Client]. Before
// each attempt a request waits out its key's cooldown, then its key's
// limiter; the key is the request's host unless [Transport].Key says
// otherwise, and [Hosts] chooses the [Limit] for each host. A throttle (a
// 429, or a 503 or 403 with a delay; see [Throttled]) pauses the whole key:
// for the delay the server asked for (Retry-After, retry-after-ms, the reset
// headers; see [RetryAfter]), or,
// after a 429 that names none, for [retry.DefaultThrottlePause], doubling with each
// consecutive one (a throttle of a request sent after the key's latest
// pause began, with no other answer between: the requests already in
// flight when the first 429 came count once), except that a key with a
// configured limit pauses for [retry.MinThrottlePause] on the first one and slows
// its rate instead (see [Transport], "Adaptive rate"); never longer than
// MaxRetryAfter, never shorter than
// [retry.MinThrottlePause]. When the pause ends, one request of the key goes first
// as a probe, and the others follow only once its answer is not another
// throttle; a throttled answer counts as an attempt of each of them. A
// request's slot is counted when it is written to the wire, so a request
// that leaves late pushes its key's later slots back (see [Transport],
// "Spacing"). The quota headers of every answer (the IETF RateLimit
// fields, X-RateLimit-*, and OpenAI's, Anthropic's, Discord's and
// Shopify's) pace the key too, so that it never runs dry before the reset
// (see [Transport], "Quota headers"). A failed attempt that is safe to
// send again is retried after the server's delay or a capped exponential
// backoff with jitter, within a number of attempts and a per-key retry
// budget: [Transport].Retry, a [retry.Policy] of package
// [github.com/pacehttp/pace/retry], holds that configuration. The zero
// Transport is ready to use, and every zero field means a documented
// default:
//
//	client := &http.Client{Transport: &pace.Transport{
//		Limits: pace.Hosts{
//			"api.example.com": { // one every 100ms, up to 100 waiting; its own retry policy
//				Limit:       pace.LeakyBucket(pace.PerSecond(10), pace.LeakyOptions{Queue: 100}),
//				MaxAttempts: 5,
//			},
//			pace.DefaultHost: {Limit: pace.TokenBucket(pace.PerMinute(600), 20)}, // 600 a minute, bursts of 20
//		},
//	}}
//
// # Per-attempt hooks
//
// [Transport].PrepareAttempt changes pace's own copy of each attempt,
// the first included, after its waits: re-sign it over a fresh timestamp,
// set a refreshed bearer token, count attempts in a header; the caller's
// request is never modified. [retry.Policy].Decide sees each attempt's
// outcome in a [retry.Check] and has the last word on retrying: it may read
// the first 4 KiB of the response body ([retry.Check.Body]; the caller
// still gets the whole body), take the wait before the next attempt from
// the body (retry.Check.Wait, capped like a Retry-After), or end the call
// with an error of its own (retry.Check.Fail). [Transport].ErrorOnGiveUp
// turns a final retryable status into an [*AttemptsError] that carries the
// response.
//
// # Limits and limiters
//
// A [Limit] describes one rate limit and holds no state. Each algorithm has
// one constructor, named for it: [TokenBucket], [LeakyBucket] (a pacer,
// GCRA), [FixedWindow], [SlidingLog] and [SlidingCounter]; [All] holds
// several at once. A [Rate] is a whole number of events per period, as API
// documentation states limits: [PerSecond], [PerMinute], [PerHour], [Every].
//
// A [Shaper] applies one Limit to a single stream of requests: its
// ReserveAt, AllowAt, CancelAt and QuotaAt take the time as an argument, so
// it can be driven and tested without a clock; Allow and Wait read the
// clock, and Wait gives up when its context ends.
//
// [Keyed] applies one Limit to each key separately (a host, an API key, a
// client address) and can pause a key until a given time. It forgets idle
// keys lazily, starts no goroutine, and bounds its memory by
// [KeyedOptions].MaxKeys. It implements throttle.Limiter, the interface the
// Transport waits on; set [Transport].Limiter to use another implementation,
// such as one whose state is shared across processes. Implementers of that
// interface, and only they, import package
// [github.com/pacehttp/pace/throttle] (its Permit and Outcome).
//
// # Errors
//
// RoundTrip keeps the [http.RoundTripper] contract: it returns a response or
// an error, never both. When retries end on a status, the last response is
// returned as it came, with a nil error, so a final 429 or 5xx reaches the
// caller's own status handling. RoundTrip's errors are:
//
//   - a [*ConfigError], matching [ErrInvalidConfig]: a setting that can
//     never work; nothing was sent.
//   - a [*WaitError] (from pace's own limiters): the first attempt was not
//     sent because its wait was refused ([ErrRateLimited], with
//     [ErrWaitTooLong], [ErrQueueFull] or [ErrWaitExceedsDeadline], the last
//     also matching [context.DeadlineExceeded]) or cut short by the context.
//   - an [*AttemptsError]: at least one attempt was sent, and no response
//     is returned. It records the attempts, the last status and why the
//     Transport gave up, and unwraps to the last transport error, to the
//     *WaitError that stopped a retry, or to the error Decide set in
//     retry.Check.Fail; with ErrorOnGiveUp it holds the last response.
//   - the error of [Transport].PrepareAttempt on the first attempt (on a
//     later one it is in an *AttemptsError).
//   - an error reading a request body that pace buffers to replay it (see
//     [Transport].MaxBufferedBody), wrapped.
//   - an error saying the request, or its URL, is nil: nothing was sent.
//
// Test errors with [errors.Is] and [errors.As]: they see through the
// [*net/url.Error] that [http.Client] wraps around every error of its
// Transport, and through the wrapping above.
//
// # Concurrency
//
// A Transport, the limiters and a Keyed are safe for concurrent use by
// multiple goroutines. A mutex guards each decision and is never held while
// waiting or while a request is sent. Do not change
// a Transport's fields, or copy it, after its first use. Limit, Rate and
// Quota are plain values, safe to copy and share. A limit can change on a
// running store: [Shaper.SetLimitAt], [Keyed.SetLimitAt],
// [Transport.SetLimit]. [Transport.Stats] is a snapshot per key of what
// the Transport did.
//
// # Other packages
//
// Module github.com/pacehttp/pace/retryable, of its own so that its
// dependency on go-retryablehttp never reaches users of this package, lets a
// go-retryablehttp client keep its code and gain pace's Retry-After reading,
// host-wide cooldown and limits; its documentation maps each
// go-retryablehttp setting to pace's.
//
// Module github.com/pacehttp/pace/metrics, of its own for its dependency
// on OpenTelemetry, reports a Transport through the OpenTelemetry metric
// API.
//
// Package [github.com/pacehttp/pace/batch] runs many calls through one
// paced client with bounded concurrency, accounts for every item, and can
// resume a run from a journal. Package
// [github.com/pacehttp/pace/middleware] limits the requests a server
// receives, per client, with the same limits, answering 429 with
// Retry-After and RateLimit headers.
package pace
