package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/asynqpace"
	"github.com/pacehttp/pace/redislimit"
	"github.com/redis/go-redis/v9"
)

// taskType is the type of the run's tasks; a task's payload is the URL
// it charges.
const taskType = "charge"

// margin is redislimit.Options.Margin: the limit in Redis counts its
// window this much longer, so that a request that reaches the API a
// little after its slot does not make rate + 1 in one of its windows
// (see examples/fleet).
const margin = 10 * time.Millisecond

// afterCrash is the retry delay of a task whose lease expired: at once,
// since its lease already held it a minute; asynq's default otherwise.
func afterCrash(n int, err error, t *asynq.Task) time.Duration {
	if errors.Is(err, asynq.ErrLeaseExpired) {
		return 0
	}
	return asynq.DefaultRetryDelayFunc(n, err, t)
}

// result is what a worker reports to the parent when it stops, as one
// JSON line on its stdout.
type result struct {
	Done      int64 `json:"done"`       // tasks its handler finished
	Requeued  int64 `json:"requeued"`   // tasks it sent back to the queue
	Failed    int64 `json:"failed"`     // tasks its handler failed
	Client429 int64 `json:"client_429"` // 429s its Transport received
}

// work is a worker: an asynq server on c.queue whose handler charges
// each task's URL through a pace.Transport holding the limit in Redis.
// It runs until ctx ends, then reports a result line.
func work(ctx context.Context, c config, stdout io.Writer) error {
	rdb := redis.NewClient(&redis.Options{Addr: c.redis, ContextTimeoutEnabled: true, PoolSize: 2 * c.concurrency})
	defer rdb.Close()
	lim, err := redislimit.New(rdb, pace.SlidingLog(pace.PerSecond(c.rate)), redislimit.Options{Prefix: c.prefix, Margin: margin})
	if err != nil {
		return err
	}
	defer lim.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis %s: %w", c.redis, err)
	}

	var out result
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = c.concurrency
	defer base.CloseIdleConnections()
	t := &pace.Transport{
		Base:    base,
		Limiter: lim,
		MaxWait: c.maxWait, // a longer wait sends the task back to the queue
		OnEvent: func(ev pace.Event) {
			if (ev.Kind == pace.EventRetry || ev.Kind == pace.EventGiveUp) && ev.StatusCode == http.StatusTooManyRequests {
				atomic.AddInt64(&out.Client429, 1)
			}
		},
	}
	client := &http.Client{Transport: t, Timeout: 30 * time.Second}
	charge := asynqpace.Handler(client, func(ctx context.Context, task *asynq.Task) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodPost, string(task.Payload()), nil)
	}, nil)
	counted := func(ctx context.Context, task *asynq.Task) error {
		err := charge.ProcessTask(ctx, task)
		var re *asynqpace.RequeueError
		switch {
		case err == nil:
			atomic.AddInt64(&out.Done, 1)
		case errors.As(err, &re):
			atomic.AddInt64(&out.Requeued, 1)
		default:
			atomic.AddInt64(&out.Failed, 1)
		}
		return err
	}

	srv := asynq.NewServer(asynq.RedisClientOpt{Addr: c.redis}, asynq.Config{
		Concurrency:              c.concurrency,
		Queues:                   map[string]int{c.queue: 1},
		RetryDelayFunc:           asynqpace.RetryDelay(afterCrash),
		IsFailure:                asynqpace.IsFailure(nil),
		TaskCheckInterval:        50 * time.Millisecond,
		DelayedTaskCheckInterval: 100 * time.Millisecond,
		LogLevel:                 asynq.ErrorLevel,
	})
	mux := asynq.NewServeMux()
	mux.HandleFunc(taskType, counted)
	if err := srv.Start(mux); err != nil {
		return err
	}
	<-ctx.Done()
	srv.Shutdown()
	return json.NewEncoder(stdout).Encode(result{
		Done: atomic.LoadInt64(&out.Done), Requeued: atomic.LoadInt64(&out.Requeued),
		Failed: atomic.LoadInt64(&out.Failed), Client429: atomic.LoadInt64(&out.Client429),
	})
}
