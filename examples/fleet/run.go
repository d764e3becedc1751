package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/pacehttp/pace/examples/internal/child"
	"github.com/pacehttp/pace/examples/internal/demoapi"
	"github.com/pacehttp/pace/examples/internal/redisserver"
)

// run is the program: the parent by default, a worker with -worker. It
// returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		usage(stdout)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "fleet: %v (see -h)\n", err)
		return 2
	}
	if cfg.worker {
		if err := work(ctx, cfg, stdout); err != nil {
			fmt.Fprintf(stderr, "fleet worker %d-%d: %v\n", cfg.from, cfg.to, err)
			return 1
		}
		return 0
	}
	s, err := execute(ctx, cfg, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "fleet: %v\n", err)
		return 1
	}
	s.print(stdout)
	if !s.ok() {
		return 1
	}
	return 0
}

// summary is what a run did, counted at the API and reported by the
// workers.
type summary struct {
	cfg       config
	redis     string // the address, and whether this program started it
	started   bool
	workers   []result
	workerErr int // workers that exited with an error

	refused, admitted int64
	once, more, never int // items served once, more than once, never
	span, wall        time.Duration
}

// ideal is the least time the API's limit allows from the first request to
// the last: rate requests may start at once, then rate more each second.
func (s summary) ideal() time.Duration {
	return time.Duration((s.cfg.items+s.cfg.rate-1)/s.cfg.rate-1) * time.Second
}

// ok reports a clean run: every item served exactly once, no 429.
func (s summary) ok() bool {
	return s.once == s.cfg.items && s.more == 0 && s.never == 0 && s.refused == 0 && s.workerErr == 0
}

// execute starts the API and, unless cfg.redis is set, redis-server, runs
// the workers and counts.
func execute(ctx context.Context, cfg config, stderr io.Writer) (s summary, err error) {
	s.cfg, s.redis = cfg, cfg.redis
	if s.redis == "" {
		srv, err := redisserver.Start(ctx)
		if err != nil {
			return s, err
		}
		defer srv.Stop()
		s.redis, s.started = srv.Addr, true
	}
	api, err := demoapi.Start(cfg.rate, false)
	if err != nil {
		return s, err
	}
	defer func() {
		if cerr := api.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("stopping the local API: %w", cerr)
		}
	}()
	exe, err := os.Executable()
	if err != nil {
		return s, err
	}
	prefix := fmt.Sprintf("fleet-%d-%d:", os.Getpid(), time.Now().UnixNano()) // a fresh limit for each run

	stderr = &lockedWriter{w: stderr} // the workers write to it at once
	start := time.Now()
	var mu sync.Mutex
	var wg sync.WaitGroup
	per := (cfg.items + cfg.workers - 1) / cfg.workers
	for w := range cfg.workers {
		from, to := min(w*per, cfg.items), min((w+1)*per, cfg.items)
		cmd := exec.CommandContext(ctx, exe, "-worker", "-api", api.URL, "-redis", s.redis, "-prefix", prefix,
			"-rate", strconv.Itoa(cfg.rate), "-concurrency", strconv.Itoa(cfg.concurrency),
			"-margin", cfg.margin.String(), "-lease", cfg.lease.String(), "-from", strconv.Itoa(from), "-to", strconv.Itoa(to))
		child.DieWithParent(cmd)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, stderr
		wg.Go(func() {
			err := cmd.Run()
			var r result
			jerr := json.Unmarshal(out.Bytes(), &r)
			mu.Lock()
			defer mu.Unlock()
			if err != nil || jerr != nil {
				s.workerErr++
			}
			if jerr == nil {
				s.workers = append(s.workers, r)
			}
		})
	}
	wg.Wait()
	s.wall = time.Since(start)
	s.refused, s.admitted, s.span = api.Refused(), api.Admitted(), api.Span()
	served := api.Served()
	for i := range cfg.items {
		switch n := served[strconv.Itoa(i)]; {
		case n == 1:
			s.once++
		case n > 1:
			s.more++
		default:
			s.never++
		}
	}
	return s, nil
}

// print writes the summary.
func (s summary) print(w io.Writer) {
	row := func(name, format string, args ...any) {
		fmt.Fprintf(w, "  %-9s %s\n", name, fmt.Sprintf(format, args...))
	}
	var succeeded, failed, throttled int
	var seen429, unavailable int64
	for _, r := range s.workers {
		succeeded += r.Succeeded
		failed += r.Failed
		throttled += r.Throttled
		seen429 += r.Client429
		unavailable += r.Unavailable
	}
	origin := "given by -redis"
	if s.started {
		origin = "started by this program"
	}
	fmt.Fprintln(w, "fleet summary")
	row("API", "at most %d requests in any 1s (sliding-window log); counted at the API", s.cfg.rate)
	row("limit", "pace.SlidingLog(pace.PerSecond(%d)) in Redis at %s (%s), shared by %d worker processes, %d calls in flight each",
		s.cfg.rate, s.redis, origin, s.cfg.workers, s.cfg.concurrency)
	row("items", "%d: %d served exactly once, %d more than once, %d never (the API's count; it admitted %d requests)",
		s.cfg.items, s.once, s.more, s.never, s.admitted)
	row("workers", "%d reported: %d succeeded, %d failed; %d exited with an error", len(s.workers), succeeded, failed, s.workerErr)
	row("429s", "%d sent by the API; %d seen by the workers' Transports; %d attempts throttled or refused by the limiter, as the batches counted them", s.refused, seen429, throttled)
	if unavailable > 0 {
		row("redis", "%d decisions not answered in time (retried by the batch)", unavailable)
	}
	ideal := s.ideal()
	ratio := ""
	if ideal > 0 {
		ratio = fmt.Sprintf(" (%.1f%% of it)", 100*float64(s.span)/float64(ideal))
	}
	row("elapsed", "%v from the first request to the last at the API%s; ideal %v = ⌈n/rate⌉ − 1 s",
		s.span.Round(time.Millisecond), ratio, ideal)
	row("wall", "%v, worker processes' start included", s.wall.Round(time.Millisecond))
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
