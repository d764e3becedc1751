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
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hibiken/asynq"
	"github.com/pacehttp/pace/examples/internal/child"
	"github.com/pacehttp/pace/examples/internal/demoapi"
	"github.com/pacehttp/pace/examples/internal/redisserver"
)

// runTimeout bounds a run: asynq's lease recovery of a killed worker's
// tasks takes about a minute.
const runTimeout = 5 * time.Minute

// run is the program: the parent by default, a worker with -worker. It
// returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		usage(stdout)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "jobqueue: %v (see -h)\n", err)
		return 2
	}
	if cfg.worker {
		if err := work(ctx, cfg, stdout); err != nil {
			fmt.Fprintf(stderr, "jobqueue worker: %v\n", err)
			return 1
		}
		return 0
	}
	s, err := execute(ctx, cfg, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "jobqueue: %v\n", err)
		return 1
	}
	s.print(stdout)
	if !s.ok() {
		return 1
	}
	return 0
}

// summary is what a run did, counted at the APIs and by asynq.
type summary struct {
	cfg       config
	redis     string
	started   bool // this program started redis-server
	workers   []result
	workerErr int // workers that exited with an error, the killed one aside
	killedAt  time.Duration

	once, more, never int   // items charged once, more than once, never
	resent            int   // items sent more than once and charged once
	refused           int64 // 429s the APIs sent
	archived          int   // tasks asynq archived: failed for good
	failedTotal       int   // attempts asynq counted as failures
	recovered         int   // tasks that spent a retry: those asynq took back from the killed worker
	span, spanLive    time.Duration
	wall              time.Duration
}

// ideal is the least time the APIs' limits allow from the first charge to
// the last: each key's share of the tasks, rate at once, then rate more
// each second.
func (s summary) ideal() time.Duration {
	per := (s.cfg.tasks + s.cfg.keys - 1) / s.cfg.keys
	return time.Duration((per+s.cfg.rate-1)/s.cfg.rate-1) * time.Second
}

// ok reports a clean run: every item charged exactly once, none archived.
func (s summary) ok() bool {
	return s.once == s.cfg.tasks && s.more == 0 && s.never == 0 && s.archived == 0 && s.workerErr == 0
}

// worker is a worker process this program started.
type worker struct {
	cmd  *exec.Cmd
	out  bytes.Buffer
	done chan error
}

// execute starts redis-server (unless cfg.redis is set) and the APIs,
// enqueues the tasks, runs the workers, kills one, and counts.
func execute(ctx context.Context, cfg config, stderr io.Writer) (s summary, err error) {
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	s.cfg, s.redis = cfg, cfg.redis
	if s.redis == "" {
		srv, err := redisserver.Start(ctx)
		if err != nil {
			return s, err
		}
		defer srv.Stop()
		s.redis, s.started = srv.Addr, true
	}
	apis := make([]*demoapi.API, cfg.keys)
	for k := range apis {
		api, err := demoapi.Start(cfg.rate, false)
		if err != nil {
			return s, err
		}
		defer func() {
			if cerr := api.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("stopping a local API: %w", cerr)
			}
		}()
		apis[k] = api
	}
	run := fmt.Sprintf("jobqueue-%d-%d", os.Getpid(), time.Now().UnixNano()) // a fresh queue and limit for each run
	redisOpt := asynq.RedisClientOpt{Addr: s.redis}
	if err := enqueue(redisOpt, run, cfg, apis); err != nil {
		return s, err
	}
	exe, err := os.Executable()
	if err != nil {
		return s, err
	}
	stderr = &lockedWriter{w: stderr}
	start := func() (*worker, error) {
		w := &worker{done: make(chan error, 1)}
		w.cmd = exec.Command(exe, "-worker", "-redis", s.redis, "-queue", run, "-prefix", run+":",
			"-rate", strconv.Itoa(cfg.rate), "-concurrency", strconv.Itoa(cfg.concurrency), "-maxwait", cfg.maxWait.String())
		w.cmd.Stdout, w.cmd.Stderr = &w.out, stderr
		child.DieWithParent(w.cmd)
		if err := w.cmd.Start(); err != nil {
			return nil, err
		}
		go func() { w.done <- w.cmd.Wait() }()
		return w, nil
	}
	var workers []*worker
	defer func() { // stop them all, by PID, and read their reports
		for _, w := range workers {
			_ = w.cmd.Process.Signal(syscall.SIGTERM)
		}
		for _, w := range workers {
			werr := <-w.done
			var r result
			if jerr := json.Unmarshal(w.out.Bytes(), &r); werr != nil || jerr != nil {
				s.workerErr++
				continue
			}
			s.workers = append(s.workers, r)
		}
	}()
	t0 := time.Now()
	for range cfg.workers {
		w, err := start()
		if err != nil {
			return s, err
		}
		workers = append(workers, w)
	}

	in := asynq.NewInspector(redisOpt)
	defer in.Close()
	var kill <-chan time.Time
	if cfg.kill > 0 {
		kill = time.After(cfg.kill)
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case <-ctx.Done():
			return s, fmt.Errorf("tasks not done: %w", ctx.Err())
		case <-kill:
			_ = workers[0].cmd.Process.Kill() // SIGKILL, as a crash
			<-workers[0].done
			s.killedAt = time.Since(t0)
			w, err := start() // as a supervisor would
			if err != nil {
				return s, err
			}
			workers[0] = w
		case <-tick.C:
			q, err := in.GetQueueInfo(run)
			if err != nil {
				return s, err
			}
			done = q.Completed+q.Archived >= cfg.tasks
		}
	}
	s.wall = time.Since(t0)
	return s, s.count(in, run, apis)
}

// maxRetry is each task's asynq.MaxRetry: it may fail this many times.
const maxRetry = 3

// enqueue puts cfg.tasks charges in queue, task i charging item i of API
// i mod keys.
func enqueue(opt asynq.RedisClientOpt, queue string, cfg config, apis []*demoapi.API) error {
	c := asynq.NewClient(opt)
	defer c.Close()
	for i := range cfg.tasks {
		u := apis[i%len(apis)].URL + "/items/" + strconv.Itoa(i)
		// Retention keeps each task's record after it is done, to count.
		// A throttle spends none of its retries (asynqpace.IsFailure).
		t := asynq.NewTask(taskType, []byte(u))
		if _, err := c.Enqueue(t, asynq.Queue(queue), asynq.MaxRetry(maxRetry), asynq.Retention(time.Hour)); err != nil {
			return err
		}
	}
	return nil
}

// count reads the APIs' counts and asynq's.
func (s *summary) count(in *asynq.Inspector, queue string, apis []*demoapi.API) error {
	q, err := in.GetQueueInfo(queue)
	if err != nil {
		return err
	}
	s.archived, s.failedTotal = q.Archived, q.FailedTotal
	recovered := map[string]bool{} // items whose task the killed worker held
	for page := 1; ; page++ {
		tasks, err := in.ListCompletedTasks(queue, asynq.PageSize(1000), asynq.Page(page))
		if err != nil {
			return err
		}
		for _, t := range tasks {
			// With asynqpace's hooks only a failure spends a retry; the
			// only failures here are the killed worker's tasks, whose
			// lease expired (asynq.ErrLeaseExpired).
			if t.Retried > 0 {
				u := string(t.Payload)
				recovered[u[strings.LastIndexByte(u, '/')+1:]] = true
			}
		}
		if len(tasks) < 1000 {
			break
		}
	}
	s.recovered = len(recovered)
	var first, last, lastLive time.Time
	for i := range s.cfg.tasks {
		api := apis[i%len(apis)]
		id := strconv.Itoa(i)
		charges, served, at := api.Charges()[id], api.Served()[id], api.Charged()[id]
		switch {
		case charges == 1:
			s.once++
			if served > 1 {
				s.resent++
			}
		case charges > 1:
			s.more++
		default:
			s.never++
			continue
		}
		if first.IsZero() || at.Before(first) {
			first = at
		}
		last = later(last, at)
		if !recovered[id] {
			lastLive = later(lastLive, at)
		}
	}
	for _, api := range apis {
		s.refused += api.Refused()
	}
	s.span, s.spanLive = last.Sub(first), lastLive.Sub(first)
	return nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// print writes the summary.
func (s summary) print(w io.Writer) {
	row := func(name, format string, args ...any) {
		fmt.Fprintf(w, "  %-9s %s\n", name, fmt.Sprintf(format, args...))
	}
	var done, requeued, failed, seen429 int64
	for _, r := range s.workers {
		done += r.Done
		requeued += r.Requeued
		failed += r.Failed
		seen429 += r.Client429
	}
	origin := "given by -redis"
	if s.started {
		origin = "started by this program"
	}
	ratio := func(d time.Duration) string {
		if s.ideal() <= 0 {
			return ""
		}
		return fmt.Sprintf(" (%.3f× ideal)", float64(d)/float64(s.ideal()))
	}
	fmt.Fprintln(w, "jobqueue summary")
	row("APIs", "%d keys, each at most %d requests in any 1s (sliding-window log); counted at the APIs", s.cfg.keys, s.cfg.rate)
	row("queue", "asynq on %s (%s); %d worker processes, %d tasks in flight each, each waiting %v at most",
		s.redis, origin, s.cfg.workers, s.cfg.concurrency, s.cfg.maxWait)
	if s.killedAt > 0 {
		row("killed", "worker 1 by SIGKILL at %v, and a new one started; asynq took back its %d tasks after their lease",
			s.killedAt.Round(time.Millisecond), s.recovered)
	}
	row("tasks", "%d: %d charged exactly once, %d more than once, %d never (the APIs' count); %d sent again and charged once (Idempotency-Key)",
		s.cfg.tasks, s.once, s.more, s.never, s.resent)
	if s.killedAt > 0 {
		row("failed", "%d archived by asynq; %d failed attempts counted by asynq, by %d tasks (the killed worker's count one each)",
			s.archived, s.failedTotal, s.recovered)
	} else {
		row("failed", "%d archived by asynq; %d failed attempts counted by asynq", s.archived, s.failedTotal)
	}
	row("workers", "%d reported: %d done, %d requeued by a throttle (no retry spent), %d failed; %d exited with an error",
		len(s.workers), done, requeued, failed, s.workerErr)
	row("429s", "%d sent by the APIs; %d seen by the workers' Transports", s.refused, seen429)
	row("elapsed", "%v from the first charge to the last%s; ideal %v = ⌈n/keys/rate⌉ − 1 s",
		s.span.Round(time.Millisecond), ratio(s.span), s.ideal())
	if s.recovered > 0 {
		row("others", "%v for every task the killed worker did not hold%s", s.spanLive.Round(time.Millisecond), ratio(s.spanLive))
	}
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
