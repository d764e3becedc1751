// Package retryable lets a [github.com/hashicorp/go-retryablehttp] client
// keep its code and gain pace's reading of the server's answer, host-wide
// cooldown and client-side limits, and guides a move to [pace.Transport].
//
// It is a module of its own (github.com/pacehttp/pace/retryable), so that
// go-retryablehttp never becomes a dependency of pace's users. Its name is
// not retryablehttp, so that both packages are imported without an alias
// and the call site says which is which (retryablehttp.NewClient,
// retryable.Policy), and not pace-anything, which would stutter.
//
// # Keeping a retryablehttp.Client
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
//   - Backoff waits for the server's delay read by [pace.RetryAfter]:
//     Retry-After in seconds or in any of the three HTTP-date forms
//     (IMF-fixdate, RFC 850, asctime; go-retryablehttp v0.7.8 reads only
//     the first), retry-after-ms and x-ms-retry-after-ms, and the reset
//     headers on a 429 or 503; every wait is capped at MaxRetryAfter.
//   - CheckRetry gives up at once on a delay above MaxRetryAfter, so the
//     client returns the response instead of sleeping for it
//     (hashicorp/go-retryablehttp#247: its DefaultBackoff sleeps whatever
//     Retry-After says, RetryWaitMax notwithstanding).
//   - The [pace.Transport] in the client's HTTPClient paces every attempt
//     by its Limits, and a 429 (or a 503 with a delay) pauses the host for
//     every goroutine and every client that shares the Transport: no
//     request of that host is sent before the pause ends, and then one goes
//     first as a probe.
//   - The Transport's [pace.Stats] (and package metrics' counters) count
//     every attempt the client makes as a request of its own. GiveUps does
//     not count the 429s and 5xx the Transport hands back: with
//     Retry.MaxAttempts 1 it makes no retries, so running out of attempts is no
//     give-up, and the client retries them (its own "giving up after N
//     attempt(s)" is for its ErrorHandler to report). A server delay above
//     MaxRetryAfter still counts ([retry.ReasonDelayTooLong]).
//   - The Transport calls the client's PrepareRetry once its waits are
//     over, before every attempt, the first included. So a signature or a
//     token it sets is fresh when the attempt leaves. A request signed
//     before Do is signed again. See [Policy.Install].
//
// # Moving to pace.Transport
//
// Each go-retryablehttp setting beside pace's, for a client kept with
// [Policy.Install] and for one moved to an [http.Client] whose Transport is
// a [pace.Transport]:
//
//	go-retryablehttp           kept (Install)             pace.Transport (Retry is a retry.Policy)
//	-------------------------  -------------------------  ------------------------------------------------
//	RetryMax (4 retries)       as is                      Retry.MaxAttempts = RetryMax+1 (attempts, the
//	                                                      first included; default 3)
//	RetryWaitMin/Max (1s/30s)  as is (Fallback's bounds)  Retry.NewBackOff (e.g. an ExponentialBackOff
//	                                                      with InitialInterval, MaxInterval); default
//	                                                      100ms doubling to 20s, full jitter;
//	                                                      MaxRetryAfter caps every wait, server delays
//	                                                      included
//	CheckRetry                 Policy.CheckRetry over     Retry (Statuses, IdempotencyHeader,
//	                           Policy.Check               AddIdempotencyKey, RetryNonIdempotent) and
//	                                                      Retry.Decide; retry.Check.Fail is CheckRetry's
//	                                                      error
//	Backoff                    Policy.Backoff over        Retry.NewBackOff and Retry.Jitter for the
//	                           Policy.Fallback            schedule; retry.Check.Wait for a delay read
//	                                                      from the response's body
//	ErrorHandler               as is                      ErrorOnGiveUp: an *AttemptsError whose
//	                                                      Response holds the last response
//	PrepareRetry               called by the Transport    PrepareAttempt(req, attempt), after the
//	                           after its waits, before    waits, before every attempt, the first
//	                           every attempt              included
//	RequestLogHook,            as is                      OnEvent (EventWait, EventThrottle, EventRetry,
//	ResponseLogHook                                       EventGiveUp)
//	Logger (Logger or          as is                      Logger (*slog.Logger, debug level)
//	LeveledLogger)
//	(none)                     (none)                     Retry.Budget: retries per host bounded by a
//	                                                      share of its recent requests (Finagle's
//	                                                      RetryBudget)
//
// What behaves differently after the move:
//
//   - A POST or PATCH is retried only when it carries an Idempotency-Key
//     (or X-Idempotency-Key) header, or with Retry.AddIdempotencyKey (pace adds a
//     random one, the same on every attempt) or Retry.RetryNonIdempotent.
//     go-retryablehttp retries every method after any retryable status or
//     connection error, so a POST the server processed can be sent twice.
//     An error that proves nothing was sent (connection refused) is retried
//     for every method.
//   - The statuses retried are 408, 429, 500, 502, 503 and 504, not every
//     5xx but 501; Stripe-Should-Retry is obeyed.
//   - When the retries run out on a status, the last response is returned
//     with a nil error, body unread, as net/http's RoundTripper contract
//     has it; go-retryablehttp closes it and returns an error ("giving up
//     after N attempt(s)"), or hands both to ErrorHandler. Set
//     ErrorOnGiveUp to get an error; its Response holds the status, the
//     headers and the first 4 KiB of the body, and nothing is left to
//     close.
//   - A server delay above MaxRetryAfter (five minutes) is not slept: the
//     response is returned at once. A date in Retry-After is honoured in
//     all three forms, and the response's Date corrects for a server clock
//     that is off.
//   - Retries spend a per-host retry budget (Retry.Budget, a retry.Budget): against a
//     host that fails every request, 1,000 concurrent calls cost about
//     1,300 attempts, not 1,000 × (RetryMax+1). A retry whose server named
//     its delay is not refused by the budget.
//   - A 429 pauses the whole host, not just the request that met it.
//   - PrepareAttempt is called before the first attempt too, on pace's own
//     copy of the request: changes never reach the caller's request, and
//     do not carry over from one attempt to the next. PrepareRetry gets a
//     shallow copy that shares its Header with the caller's request.
//   - RoundTrip returns a response or an error, never both
//     (hashicorp/go-retryablehttp#179), and pace's errors are typed: test
//     them with errors.Is and errors.As ([pace.ErrRateLimited],
//     [*pace.AttemptsError]).
//   - A Logger is an *slog.Logger that never sees the values of
//     Authorization, Cookie, API-key or token headers, nor the URL's query;
//     there is no interface{} Logger to panic on
//     (hashicorp/go-retryablehttp#243).
package retryable
