// Command jobqueue runs 500 API calls as tasks of an asynq job queue
// (github.com/hibiken/asynq). Four worker processes share each key's
// limit and pause through Redis (packages asynqpace and redislimit).
// One worker is killed with SIGKILL mid-run.
//
//	go -C examples/jobqueue run .     # 500 tasks, 4 workers
//	go -C examples/jobqueue run . -h  # the flags
//
// It starts, on loopback, a redis-server (unless -redis names one) and
// -keys copies of the examples' demo API. Each allows -rate requests in
// any second: four keys, one per host. It enqueues -n charges (POST),
// spread evenly over the keys, and starts -workers worker processes
// (os.Executable with -worker). Each runs an asynq server whose handler
// is asynqpace.Handler, through a pace.Transport whose Limiter is a
// redislimit.Limiter holding the API's limit. A task that would wait
// more than -maxwait (5 s) goes back to the queue, spending no retry.
//
// After -kill the first worker is killed with SIGKILL, and a new one
// starts, as a supervisor would start it. asynq runs the tasks the dead
// worker held once their lease has expired: 30 s, then 30 s of grace,
// then asynq's check, once a minute; none of them is configurable. The
// new worker's check catches them: a killed run takes about -kill + 60 s.
// Every task still sends its own Idempotency-Key, so the API charges it
// once.
//
// The summary counts at the API: items charged once, twice and never,
// 429s, and the time from the first charge to the last. The ideal is
// the least time the API's limit allows, ⌈n/keys/rate⌉ − 1 s. asynq
// counts archived tasks. The exit code is 0 when every item was charged
// exactly once and none was archived, 1 otherwise, 2 for bad flags.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signalContext()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// signalContext ends on Ctrl-C or SIGTERM: the parent stops its
// workers with SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
