package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/pacehttp/pace/examples/internal/redisserver"
)

// Defaults and bounds of the flags.
const (
	defaultItems       = 300
	defaultRate        = 50
	defaultWorkers     = 4
	defaultConcurrency = 4
	defaultMargin      = 10 * time.Millisecond // see the package documentation

	maxItems       = 100_000
	maxRate        = 100_000
	maxWorkers     = 64
	maxConcurrency = 1000
)

// config is what the flags ask for.
type config struct {
	items       int           // -n
	rate        int           // -rate: the API's limit, requests in any 1 s
	workers     int           // -workers
	concurrency int           // -concurrency, per worker
	redis       string        // -redis: host:port; empty starts one
	margin      time.Duration // -margin: redislimit.Options.Margin
	lease       time.Duration // -lease: redislimit.Options.Lease; 0: a decision per request

	// Worker mode (-worker), set by the parent.
	worker   bool
	api      string // the API's base URL
	prefix   string // the run's Redis key prefix
	from, to int    // the worker's items, [from, to)
}

func flagSet(c *config) *flag.FlagSet {
	fs := flag.NewFlagSet("fleet", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.IntVar(&c.items, "n", defaultItems, fmt.Sprintf("items, one call each (1 to %d)", maxItems))
	fs.IntVar(&c.rate, "rate", defaultRate, fmt.Sprintf("the API's limit: requests in any 1-second window (1 to %d)", maxRate))
	fs.IntVar(&c.workers, "workers", defaultWorkers, fmt.Sprintf("worker processes (1 to %d)", maxWorkers))
	fs.IntVar(&c.concurrency, "concurrency", defaultConcurrency, fmt.Sprintf("calls in flight per worker (1 to %d)", maxConcurrency))
	fs.StringVar(&c.redis, "redis", "", "Redis address host:port; empty starts a redis-server of its own")
	fs.DurationVar(&c.margin, "margin", defaultMargin, "how much longer the limit in Redis counts its window (redislimit.Options.Margin; at least 0, under 50ms)")
	fs.DurationVar(&c.lease, "lease", 0, "each worker decides on a leased share of the limit, renewed once a lease (redislimit.Options.Lease; 0: one Redis round trip per request, else 200ms to 1m)")
	fs.BoolVar(&c.worker, "worker", false, "run as a worker (the parent passes this and the flags below)")
	fs.StringVar(&c.api, "api", "", "worker: the API's base URL")
	fs.StringVar(&c.prefix, "prefix", "", "worker: the Redis key prefix of the run")
	fs.IntVar(&c.from, "from", 0, "worker: first item")
	fs.IntVar(&c.to, "to", 0, "worker: item after the last")
	return fs
}

// parseArgs parses and checks args.
func parseArgs(args []string) (config, error) {
	var c config
	fs := flagSet(&c)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	switch {
	case c.items < 1 || c.items > maxItems:
		return c, fmt.Errorf("-n %d: want 1 to %d", c.items, maxItems)
	case c.rate < 1 || c.rate > maxRate:
		return c, fmt.Errorf("-rate %d: want 1 to %d", c.rate, maxRate)
	case c.workers < 1 || c.workers > maxWorkers:
		return c, fmt.Errorf("-workers %d: want 1 to %d", c.workers, maxWorkers)
	case c.concurrency < 1 || c.concurrency > maxConcurrency:
		return c, fmt.Errorf("-concurrency %d: want 1 to %d", c.concurrency, maxConcurrency)
	case c.margin < 0 || c.margin >= 50*time.Millisecond:
		return c, fmt.Errorf("-margin %v: want at least 0, under 50ms", c.margin)
	case c.lease != 0 && (c.lease < 200*time.Millisecond || c.lease > time.Minute):
		return c, fmt.Errorf("-lease %v: want 0, or 200ms to 1m", c.lease)
	case c.worker && (c.api == "" || c.redis == "" || c.prefix == "" || c.from < 0 || c.to < c.from):
		return c, errors.New("-worker needs -api, -redis, -prefix and 0 <= -from <= -to")
	}
	if c.redis != "" {
		return c, redisserver.Check(c.redis)
	}
	return c, nil
}

// usage writes the help text to w.
func usage(w io.Writer) {
	fmt.Fprint(w, `Usage: go run ./examples/fleet [flags]

Starts a local API allowing -rate requests in any second and, unless -redis
is given, a redis-server; runs -workers worker processes that share one
limit in Redis (package redislimit) and do -n items with package batch; and
prints a summary counted at the API. Exit code 0 if every item was done
exactly once with no 429, 1 otherwise, 2 for bad flags.

Flags:
`)
	var c config
	fs := flagSet(&c)
	fs.SetOutput(w)
	fs.VisitAll(func(f *flag.Flag) {
		switch f.Name {
		case "worker", "api", "prefix", "from", "to":
			return
		}
		fmt.Fprintf(w, "  -%s\t%s (default %s)\n", f.Name, f.Usage, f.DefValue)
	})
}
