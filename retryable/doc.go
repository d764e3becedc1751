// Package retryable lets a [github.com/hashicorp/go-retryablehttp] client
// keep its code and gain pace's reading of the server's answer, host-wide
// cooldown and client-side limits. It also guides a move to
// [pace.Transport].
//
// It is a module of its own, so that go-retryablehttp never becomes a
// dependency of pace's users. Its name lets both packages be imported
// without an alias.
//
//	client := retryablehttp.NewClient()
//	policy := &retryable.Policy{} // the zero Policy: 5-minute cap, the client's own retry rules
//	err := policy.Install(client, &pace.Transport{
//		Retry:  retry.Policy{MaxAttempts: 1}, // the client makes the retries; the Transport paces each attempt
//		Limits: pace.Hosts{"api.example.com": {Limit: pace.TokenBucket(pace.PerSecond(10), 5)}},
//	})
//
// Then:
//
//   - Backoff waits for the server's delay, read by [pace.RetryAfter]. Every
//     wait is capped at MaxRetryAfter.
//   - CheckRetry gives up at once on a delay above MaxRetryAfter. The client
//     returns the response instead of sleeping for it
//     (hashicorp/go-retryablehttp#247).
//   - The [pace.Transport] paces every attempt by its Limits. A 429 pauses
//     the host for every goroutine and client sharing the Transport.
//   - The Transport's [pace.Stats] count every attempt as a request. With
//     Retry.MaxAttempts 1, running out of attempts is no give-up.
//   - The Transport calls the client's PrepareRetry once its waits are
//     over, before every attempt, the first included. So a signature it
//     sets is fresh when the attempt leaves. See [Policy.Install].
//
// docs/migrate-retryablehttp.md maps each go-retryablehttp setting to
// pace's. It also lists what behaves differently after a move to
// pace.Transport: POSTs are retried only with an idempotency key, a final
// status returns the response with a nil error, and 429s pause the host.
package retryable
