package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/batch"
	"github.com/pacehttp/pace/batch/progress"
	"github.com/pacehttp/pace/examples/internal/demoapi"
)

// run is the program: it parses args, runs the batch and prints to stdout;
// errors go to stderr. It returns the exit code: 0 if every item succeeded,
// 1 if any failed or was not done (or the run could not start), 2 for bad
// flags (one line on stderr).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		usage(stdout)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "batch: %v (see -h)\n", err)
		return 2
	}
	t, err := execute(ctx, cfg, stdout)
	if err != nil {
		fmt.Fprintln(stderr, errorLine(err))
		return 1
	}
	t.print(stdout)
	if t.err != nil {
		fmt.Fprintln(stderr, errorLine(t.err))
	}
	if !t.ok() {
		return 1
	}
	return 0
}

// errorLine formats err for stderr, prefixed with "batch: " once (package
// batch's errors carry that prefix already).
func errorLine(err error) string {
	msg := err.Error()
	if strings.HasPrefix(msg, "batch: ") {
		return msg
	}
	return "batch: " + msg
}

// execute starts the local API unless cfg.url is set, runs the batch
// against it and returns what happened. The error is about setting up; the
// batch's own outcome is in the tally.
func execute(ctx context.Context, cfg config, stdout io.Writer) (t tally, err error) {
	tmpl := cfg.url
	if tmpl == "" {
		var f demoapi.Faults
		if cfg.faults {
			f = demoapi.Faults{Unavailable: faultUnavailable, Reset: faultReset}
		}
		a, err := demoapi.StartFaulty(cfg.rate, cfg.mismatch, f) // -mismatch: no RateLimit fields to pace from
		if err != nil {
			return t, err
		}
		defer func() {
			if cerr := a.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("stopping the local API: %w", cerr)
			}
			t.admitted, t.refused = a.Admitted(), a.Refused()
			if cfg.faults {
				t.faults = true
				t.unavailable, t.resets, t.resetsAfter = a.Faults()
				for _, n := range a.Charges() {
					if n > 1 {
						t.chargedTwice++
					}
				}
			}
		}()
		t.local = true
		tmpl = a.URL + "/items/{i}"
	}
	u, err := url.Parse(itemURL(tmpl, 0))
	if err != nil {
		return t, err
	}

	base := newBase(cfg.concurrency)
	defer base.CloseIdleConnections()
	var counts clientCounts
	r := pacing(cfg.clientRate())
	client, err := newClient(u.Host, r, cfg.timeout, base, &counts)
	if err != nil {
		return t, err
	}
	t.rate, t.journal = cfg.rate, cfg.journal
	printHeader(stdout, cfg, tmpl, t.local, r.Interval())

	items := make([]int, cfg.calls)
	for i := range items {
		items[i] = i
	}
	method := http.MethodGet
	if cfg.faults {
		method = http.MethodPost // a charge: batch.HTTP gives it the item's Idempotency-Key
	}
	get := func(ctx context.Context, i int) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, method, itemURL(tmpl, i), nil)
	}
	// The printer shows what the batch saw: not the 429s the Transport
	// retried on its own, which only the summary below counts.
	pr := &progress.Printer{Out: stdout, Title: "batch-level"}
	call := batch.HTTP(client, get, batch.CheckResponse)
	fn := func(ctx context.Context, i int) error {
		err := call(ctx, i)
		if errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, pace.ErrRateLimited) && ctx.Err() == nil {
			return fmt.Errorf("no answer within -timeout %v: %w", cfg.timeout, err) // http.Client.Timeout
		}
		return err
	}
	rep, runErr := batch.Run(ctx, items, fn, batch.Options{
		Concurrency: cfg.concurrency,
		Journal:     cfg.journal,
		OnProgress:  pr.Update,
	})
	if rep == nil { // nothing ran: the journal could not be opened, say
		return t, runErr
	}
	if cfg.report != "" {
		if err := writeReport(cfg.report, rep); err != nil {
			return t, err
		}
		t.report = cfg.report
	}
	t.Summary = rep.Summary
	t.Ideal = ideal(t.Items-t.Resumed, cfg.rate)
	shown := t.Summary
	shown.Ideal = shown.Ideal.Round(time.Millisecond)
	pr.Finish(shown)
	t.err = runErr
	t.client429, t.pauses, t.transportRetries = counts.seen429.Load(), counts.pauses.Load(), counts.retries.Load()
	for i, res := range rep.Results {
		if res.Attempts > 1 || counts.retried(itemURL(tmpl, i)) {
			t.retriedItems++
		}
	}
	return t, nil
}

// writeReport writes rep's picture to path as HTML (see -report).
func writeReport(path string, rep *batch.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("-report: %v", oneLine(err))
	}
	if err := rep.WriteHTML(f); err != nil {
		f.Close()
		return fmt.Errorf("-report %q: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("-report %q: %w", path, err)
	}
	return nil
}

// ideal returns the least time for calls calls spaced evenly at rate per
// second: (calls − 1)/rate seconds, when the last one starts (see the
// package documentation).
func ideal(calls, rate int) time.Duration {
	if calls <= 1 {
		return 0
	}
	return time.Duration(int64(calls-1) * int64(time.Second) / int64(rate))
}

// printHeader says what the run is about to do.
func printHeader(w io.Writer, cfg config, tmpl string, local bool, interval time.Duration) {
	if local {
		headers := "RateLimit fields on every answer"
		if cfg.mismatch {
			headers = "no RateLimit fields (-mismatch), only Retry-After on a 429"
		}
		fmt.Fprintf(w, "API     %s (local): at most %d requests in any 1s, sliding-window log (package middleware), %s\n", tmpl, cfg.rate, headers)
	} else {
		fmt.Fprintf(w, "API     %s: taken to allow %d requests per second\n", tmpl, cfg.rate)
	}
	why := "exactly the API's limit"
	if cfg.margin > 0 {
		why = fmt.Sprintf("%g%% below the API's limit (-margin %g)", cfg.margin*100, cfg.margin)
	}
	if cfg.mismatch {
		why = fmt.Sprintf("%g× the API's limit (-mismatch)", mismatchFactor)
	}
	fmt.Fprintf(w, "client  pace.Transport with a leaky-bucket pacer: %.4g calls/s, one every %v, %s\n",
		float64(time.Second)/float64(interval), interval, why)
	if cfg.faults {
		fmt.Fprintf(w, "faults  the API answers %g%% of requests 503 and resets %g%% of connections, half of them after the charge was applied (-faults)\n",
			100*faultUnavailable, 100*faultReset)
		fmt.Fprintf(w, "batch   %d charges (POST, each with batch.HTTP's Idempotency-Key), at most %d in flight, each given up after %v (-timeout)\n", cfg.calls, cfg.concurrency, cfg.timeout)
	} else {
		fmt.Fprintf(w, "batch   %d calls, at most %d in flight, each given up after %v (-timeout)\n", cfg.calls, cfg.concurrency, cfg.timeout)
	}
	if cfg.journal != "" {
		fmt.Fprintf(w, "journal %s (items it records as done are skipped)\n", cfg.journal)
	}
}
