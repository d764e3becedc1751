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
	defaultTasks       = 500
	defaultRate        = 5
	defaultKeys        = 4
	defaultWorkers     = 4
	defaultConcurrency = 8
	defaultKill        = 10 * time.Second
	defaultMaxWait     = 5 * time.Second

	maxTasks       = 100_000
	maxRate        = 10_000
	maxKeys        = 64
	maxWorkers     = 64
	maxConcurrency = 1000
)

// config is what the flags ask for.
type config struct {
	tasks       int           // -n
	rate        int           // -rate: each key's limit, requests in any 1 s
	keys        int           // -keys: demo APIs, one key each
	workers     int           // -workers
	concurrency int           // -concurrency: asynq.Config.Concurrency per worker
	kill        time.Duration // -kill: when the first worker is killed; 0 for never
	maxWait     time.Duration // -maxwait: pace.Transport.MaxWait of the workers
	redis       string        // -redis: host:port; empty starts one

	// Worker mode (-worker), set by the parent.
	worker bool
	queue  string // the run's asynq queue
	prefix string // the run's redislimit prefix
}

func flagSet(c *config) *flag.FlagSet {
	fs := flag.NewFlagSet("jobqueue", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.IntVar(&c.tasks, "n", defaultTasks, fmt.Sprintf("tasks, one charge each (1 to %d)", maxTasks))
	fs.IntVar(&c.rate, "rate", defaultRate, fmt.Sprintf("each key's limit: requests in any 1-second window (1 to %d)", maxRate))
	fs.IntVar(&c.keys, "keys", defaultKeys, fmt.Sprintf("keys: demo APIs, one host each (1 to %d)", maxKeys))
	fs.IntVar(&c.workers, "workers", defaultWorkers, fmt.Sprintf("worker processes (1 to %d)", maxWorkers))
	fs.IntVar(&c.concurrency, "concurrency", defaultConcurrency, fmt.Sprintf("tasks in flight per worker (1 to %d)", maxConcurrency))
	fs.DurationVar(&c.kill, "kill", defaultKill, "when to SIGKILL the first worker and start a new one; 0 for never")
	fs.DurationVar(&c.maxWait, "maxwait", defaultMaxWait, "the longest a task waits for its key in a worker; longer sends it back to the queue (pace.Transport.MaxWait, 1ms to 1m)")
	fs.StringVar(&c.redis, "redis", "", "Redis address host:port; empty starts a redis-server of its own")
	fs.BoolVar(&c.worker, "worker", false, "run as a worker (the parent passes this and the flags below)")
	fs.StringVar(&c.queue, "queue", "", "worker: the asynq queue of the run")
	fs.StringVar(&c.prefix, "prefix", "", "worker: the Redis key prefix of the run's limits")
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
	case c.tasks < 1 || c.tasks > maxTasks:
		return c, fmt.Errorf("-n %d: want 1 to %d", c.tasks, maxTasks)
	case c.rate < 1 || c.rate > maxRate:
		return c, fmt.Errorf("-rate %d: want 1 to %d", c.rate, maxRate)
	case c.keys < 1 || c.keys > maxKeys:
		return c, fmt.Errorf("-keys %d: want 1 to %d", c.keys, maxKeys)
	case c.workers < 1 || c.workers > maxWorkers:
		return c, fmt.Errorf("-workers %d: want 1 to %d", c.workers, maxWorkers)
	case c.concurrency < 1 || c.concurrency > maxConcurrency:
		return c, fmt.Errorf("-concurrency %d: want 1 to %d", c.concurrency, maxConcurrency)
	case c.kill < 0:
		return c, fmt.Errorf("-kill %v: want at least 0", c.kill)
	case c.maxWait < time.Millisecond || c.maxWait > time.Minute:
		return c, fmt.Errorf("-maxwait %v: want 1ms to 1m", c.maxWait)
	case c.worker && (c.redis == "" || c.queue == "" || c.prefix == ""):
		return c, errors.New("-worker needs -redis, -queue and -prefix")
	}
	if c.redis != "" {
		return c, redisserver.Check(c.redis)
	}
	return c, nil
}

// usage writes the help text to w.
func usage(w io.Writer) {
	fmt.Fprint(w, `Usage: go -C examples/jobqueue run . [flags]

Starts -keys local APIs, each allowing -rate requests in any second, and,
unless -redis is given, a redis-server. Enqueues -n charges as asynq
tasks and runs -workers worker processes sharing each key's limit in
Redis. Kills the first worker with SIGKILL after -kill and starts a new
one. Prints a summary counted at the APIs. Exit code 0 if every task was
charged exactly once and none archived, 1 otherwise, 2 for bad flags.

Flags:
`)
	var c config
	fs := flagSet(&c)
	fs.VisitAll(func(f *flag.Flag) {
		switch f.Name {
		case "worker", "queue", "prefix":
			return
		}
		fmt.Fprintf(w, "  -%s\t%s (default %s)\n", f.Name, f.Usage, f.DefValue)
	})
}
