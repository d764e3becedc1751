// Command payments shows an http.Client for a payment-style API that
// charges every order exactly once although the API throttles, fails and
// drops connections now and then.
//
//	go run ./examples/payments          # 40 orders
//	go run ./examples/payments -n 200   # more orders
//	go run ./examples/payments -h       # the flags
//
// It starts a fake payment API on loopback (127.0.0.1, a free port) that
// deduplicates POST /v1/charges by their Idempotency-Key header, as Stripe,
// Adyen and most payment APIs do, and misbehaves on a fixed schedule:
//
//   - every 9th request is throttled: 429 with Retry-After: 1 and the finer
//     retry-after-ms: 20 (the OpenAI and Azure header, which pace prefers);
//   - every 13th request, unless throttled, fails before it is processed:
//     503;
//   - of the charges it makes, one in three is followed by trouble: the
//     connection is dropped with no answer, or a 503 comes back, so the
//     client cannot know the charge was made.
//
// The client is a pace.Transport with a per-host token bucket (100 a
// second, bursts of 10) that retries 429 and 503 answers and dropped
// connections. It may retry a POST only because each carries an
// Idempotency-Key, derived from the order so that every attempt of one
// order, and any later call for it, sends the same key: a retry of a charge
// that was made is answered from the API's idempotency store, not charged
// again. (Transport.AddIdempotencyKey gives POSTs a random key instead,
// which protects the Transport's own retries but not a second call of your
// code for the same order.) Without a key, pace does not resend a POST that
// may have been processed (digitalocean/netbox-ip-controller#14).
//
// It prints the orders that needed more than one attempt, with what
// happened to each attempt, then a summary: the API's faults, every one of
// which the client retried with the same key, the retries answered from the
// idempotency store, charges made against orders, and the orders the client
// gave up on. It exits 0 only if every order ended charged exactly once, 1
// if not, and 2 for a bad flag or argument (one line on stderr).
package main

import (
	"context"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
