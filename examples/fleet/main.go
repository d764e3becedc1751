// Command fleet shows one limit shared by several processes through Redis
// (package redislimit): four worker processes, each running a batch
// (package batch, through a pace.Transport whose Limiter is a
// redislimit.Limiter), share the limit of one strict API, at exactly its
// documented limit.
//
//	go run ./examples/fleet               # 300 items, 4 workers, about 6 s
//	go run ./examples/fleet -redis host:port
//	go run ./examples/fleet -h            # the flags
//
// It starts, on loopback, the demo API of examples/batch (at most -rate
// requests in any 1 s, an exact sliding-window log, 429 with Retry-After
// beyond it) and, unless -redis names one, a redis-server of its own on a
// free port with no persistence (it says how to install redis-server when
// it is missing). It then runs itself -workers times as a worker process
// (os.Executable with -worker), each doing its share of the -n items with
// -concurrency calls in flight. Every worker holds the same limit in
// Redis, pace.SlidingLog(pace.PerSecond(rate)), the API's own, under the
// same prefix and key (the API's host), so the workers together keep to
// it: alone, each would allow the whole rate.
//
// The summary counts from the API's side: 429s sent (0 on a clean run),
// items served and how often each was (each exactly once), and the time
// from the first admitted request to the last, next to the ideal: the
// least time the API's limit allows for n requests, ⌈n/rate⌉ − 1 seconds
// (rate requests start at once, then rate more each second). The limit in
// Redis counts its window -margin (10 ms) longer (redislimit.Options.Margin),
// so that a request that reaches the API's handler a little later than its
// slot does not put rate + 1 into one of the API's windows; that costs 1 %.
// A request that leaves the worker later than that has its booking moved
// (redislimit's Depart), but the API's own scheduling, after the request
// left, is seen by nobody: on a loaded 2-core machine, with the library's
// default of 2 ms, 3 runs in 5 met one or two 429s (each then pauses the
// key for the API's Retry-After, a second); with 10 ms, none in 5. The exit code
// is 0 when every item was done exactly once with no 429, 1 otherwise, 2
// for bad flags.
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
