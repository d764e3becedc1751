// Command perhost shows one http.Client that paces several hosts, each by
// its own limit, with a default for every host not listed.
//
//	go run ./examples/perhost      # no flags but -h
//
// The client's pace.Transport has one pace.Hosts map:
//
//	api.payments.example   LeakyBucket(PerSecond(5), LeakyOptions{Queue: 10})   one call every 200ms
//	api.search.example     TokenBucket(PerSecond(20), 5)                       bursts of 5, then 20 a second
//	internal.example       the zero pace.Host                                  not paced
//	"*" (pace.DefaultHost) LeakyBucket(PerSecond(10), LeakyOptions{Queue: 10}) every other host: one every 100ms
//
// The default's state is kept per host: maps.example and cdn.example,
// neither listed, each get their own 10 a second, not 10 between them.
//
// All the names lead, through a custom dialer, to one server on loopback
// (127.0.0.1, a free port), which records when each request arrived and
// for which Host. The program sends 6 requests to each of five hosts at
// once and prints, per host, the arrivals as the server saw them. It exits
// 0 if every request was answered, 1 if not, and 2, with one line on
// stderr, for any flag but -h or any argument.
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
