// Package retry holds the retry configuration of a pace Transport
// ([github.com/pacehttp/pace.Transport]): which failed attempts are sent
// again, how many times, after which backoff, and within which budget. Its
// types are plain configuration with exported fields, set in the
// Transport's Retry field; the Transport applies them. As in the AWS SDK
// for Go's aws/retry and failsafe-go's retrypolicy, the retry vocabulary
// lives in a package of its own, so its names need no "Retry" prefix:
//
//	client := &http.Client{Transport: &pace.Transport{
//		Retry: retry.Policy{
//			MaxAttempts:       5,
//			AddIdempotencyKey: true, // POSTs get an Idempotency-Key and become safe to retry
//			Jitter:            retry.EqualJitter,
//		},
//	}}
//
// Every zero value means the documented default, so the zero [Policy] is
// pace's default retry behaviour: [DefaultMaxAttempts] attempts, the
// statuses of [DefaultStatuses], idempotent methods only (or a request
// carrying [DefaultIdempotencyHeader]), a backoff from
// [DefaultBackoffInitial] doubling up to [DefaultBackoffMax] with
// [FullJitter], and the default [Budget].
//
// [Policy].Decide sees each finished attempt as a [Check] and has the last
// word on retrying it. [Reason] is the one vocabulary of why: a Check's
// default decision, pace's events and its *pace.AttemptsError use it.
//
// The Transport validates its Policy on first use (and in its Validate
// method): an invalid setting is reported as a *pace.ConfigError matching
// pace.ErrInvalidConfig, its Field naming the setting, such as
// "Retry.Statuses" or "Retry.Budget.TTL". This package does not import
// pace; pace imports it.
//
// The types here hold no state and are safe to copy before use. Do not
// change a Policy once a Transport uses it: the Transport copies it on
// first use, so later changes have no effect.
package retry
