package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/batch"
	"github.com/pacehttp/pace/redislimit"
	"github.com/redis/go-redis/v9"
)

// result is what a worker reports to the parent, as one JSON line on its
// stdout.
type result struct {
	Items       int   `json:"items"`
	Succeeded   int   `json:"succeeded"`
	Failed      int   `json:"failed"`
	Throttled   int   `json:"throttled"`   // attempts the batch saw throttled (429s, or Redis unavailable)
	Client429   int64 `json:"client_429"`  // 429s the worker's Transport received
	Unavailable int64 `json:"unavailable"` // decisions Redis did not answer in time (failed closed)
}

// work is a worker: it does items [c.from, c.to) against c.api with
// package batch, through a pace.Transport whose Limiter holds the API's
// limit in Redis, and reports a result line.
func work(ctx context.Context, c config, stdout io.Writer) error {
	rdb := redis.NewClient(&redis.Options{Addr: c.redis, ContextTimeoutEnabled: true, PoolSize: 2 * c.concurrency})
	defer rdb.Close()
	margin := c.margin
	if margin == 0 {
		margin = -1 // redislimit: negative means none
	}
	lim, err := redislimit.New(rdb, pace.SlidingLog(pace.PerSecond(c.rate)), redislimit.Options{Prefix: c.prefix, Margin: margin, Lease: c.lease})
	if err != nil {
		return err
	}
	defer lim.Close()
	if err := rdb.Ping(ctx).Err(); err != nil { // connect before the clock starts
		return fmt.Errorf("redis %s: %w", c.redis, err)
	}

	var seen429, unavailable atomic.Int64
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = c.concurrency
	defer base.CloseIdleConnections()
	t := &pace.Transport{
		Base:    base,
		Limiter: lim,
		OnEvent: func(ev pace.Event) {
			if (ev.Kind == pace.EventRetry || ev.Kind == pace.EventGiveUp) && ev.StatusCode == http.StatusTooManyRequests {
				seen429.Add(1)
			}
		},
	}
	client := &http.Client{Transport: t, Timeout: 30 * time.Second}
	items := make([]int, 0, c.to-c.from)
	for i := c.from; i < c.to; i++ {
		items = append(items, i)
	}
	get := func(ctx context.Context, i int) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodGet, c.api+"/items/"+strconv.Itoa(i), nil)
	}
	call := batch.HTTP(client, get, batch.CheckResponse)
	fn := func(ctx context.Context, i int) error {
		err := call(ctx, i)
		if errors.Is(err, redislimit.ErrUnavailable) {
			unavailable.Add(1) // batch retries it after its backoff
		}
		return err
	}
	rep, err := batch.Run(ctx, items, fn, batch.Options{Concurrency: c.concurrency})
	if rep == nil {
		return err
	}
	out := result{
		Items: rep.Summary.Items, Succeeded: rep.Summary.Succeeded, Failed: rep.Summary.Failed,
		Throttled: rep.Summary.Throttled, Client429: seen429.Load(), Unavailable: unavailable.Load(),
	}
	if jerr := json.NewEncoder(stdout).Encode(out); jerr != nil {
		return jerr
	}
	return err
}
