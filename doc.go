// Package pace keeps outbound HTTP calls within the rate limits of the APIs
// they call, and retries throttled or failed requests safely.
//
// The rate-limiting core offers the classic algorithms as pure types that
// take explicit time (ReserveAt, AllowAt, CancelAt) plus a blocking Wait:
// [TokenBucket], [LeakyBucket], [FixedWindow], [SlidingLog],
// [SlidingCounter], and [Composite] for several limits at once. [Keyed] holds
// one such limit per key (for example per host) with bounded memory.
//
// All types are safe for concurrent use by multiple goroutines unless their
// documentation says otherwise.
package pace
