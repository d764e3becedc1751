// Command batch is pace's main demo: a nightly-style batch of calls through
// a strict rate-limited API, with nothing rejected for good and nothing lost.
//
//	go run ./examples/batch              # 300 calls, about 4.5 seconds
//	go run ./examples/batch -mismatch    # a client set 1.5× too fast, an API without RateLimit fields: 429s, pauses, still nothing lost
//	go run ./examples/batch -mismatch -report run.html  # the same, and a picture of the run to open in a browser
//	go run ./examples/batch -h           # the flags
//
// It starts, on loopback (127.0.0.1, a free port), an API that allows at most
// -rate requests in any 1-second window: package middleware with an exact
// sliding-window log, pace.SlidingLog(pace.PerSecond(rate)), answering excess
// with 429 and Retry-After, and stating its limit in the IETF RateLimit
// fields (but with -mismatch, so that the client meets 429s rather than
// pacing itself from them). It then sends -n GET requests, one per item,
// through batch.Run and batch.HTTP, with an http.Client whose pace.Transport
// paces the API's host with a leaky bucket (pace.LeakyBucket): calls leave evenly
// spaced, at most -concurrency in flight, each call given up after -timeout
// (30 s by default), so that an API that never answers cannot hang the
// batch. Progress shows as a bar on a terminal and as lines otherwise,
// labelled "batch-level": it counts what reached the batch, not the 429s
// the Transport retried on its own. A summary follows: items, succeeded,
// failed, not done (interrupted or never started, as after Ctrl-C; a run
// with the same -journal does them), the 429s counted at the server and by
// the client (through Transport.OnEvent), retries, elapsed and ideal time.
// The exit code is 0 only if every item succeeded: none failed, none left
// undone; 1 otherwise; 2 for bad flags, -journal and -timeout included.
//
// # Pacing at exactly the limit
//
// The client paces at exactly the API's limit. A pacer set at a server's
// limit used to meet 429s now and then: the server counts arrivals, and a
// request that leaves late (a new connection, a timer firing late) puts it
// and the next one closer than 1/rate on the wire. pace counts a request's
// slot where it actually leaves (net/http/httptrace), so a late departure
// pushes the key's later slots back, with a built-in margin (1.5 ms, or a
// 64th of the interval) for the server's own clock and scheduling, which
// widens when the server still refuses a request that left at its slot;
// see pace.Transport.
// -margin paces further below the limit, for an API whose limit is not
// known exactly.
//
// # The ideal time
//
// Ideal = (n − 1) / rate seconds: when the last of n calls would start if
// calls left evenly spaced, 1/rate apart, at exactly the API's limit, which
// is what a leaky-bucket pacer does. (A client that burst rate calls at
// once and then waited could start the last one after ⌊(n − 1)/rate⌋ s,
// but only by putting rate requests into one instant, which an API stating
// "N per second" rarely welcomes and a pacer never does.) On a clean run the
// elapsed time is about 102% of the ideal: each 13.3 ms gap at 75/s grows
// by pace's margin (0.21 ms there) and the time a request takes to reach
// the wire; the last millisecond of each wait yields rather than sleeping
// on a timer, which wakes up to a millisecond late.
//
// # A flaky API
//
// With -faults, the local API answers 20% of the requests it admits with
// 503 Service Unavailable (an outage: no Retry-After, no RateLimit fields)
// and resets 5% of connections (TCP RST), half of them after it applied
// the request, and the calls are charges: POST requests, each of which
// batch.HTTP gives the item's Idempotency-Key (batch.IdempotencyKey), so
// that the API, which charges once per key, charges each item once however
// often the call is sent. The Transport retries the 503s and the resets
// (the key makes a POST safe to repeat), and what outlives its attempts
// goes back in the batch's line (batch.Options.MaxRequeues). The summary
// adds how many items were retried, how many are in doubt (started by a
// killed run and not sent again: none without a -journal), and the API's
// count of faults and of items charged twice.
//
// # Other APIs
//
// With -url, no local server starts: each call is a GET of that URL, with
// "{i}" in it, if any, replaced by the item's number, paced for an API that
// allows -rate requests per second. Only the client's count of 429s is then
// known.
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
