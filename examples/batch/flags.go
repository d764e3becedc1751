package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Defaults and bounds of the flags.
const (
	defaultCalls       = 300
	defaultRate        = 75 // 300 calls at 75/s: ideal 3.99 s
	defaultMargin      = 0  // pace's own departure margin is enough (see main.go)
	defaultConcurrency = 8
	defaultTimeout     = 30 * time.Second

	// mismatchFactor is how much faster than the API's limit -mismatch
	// paces the client.
	mismatchFactor = 1.5

	// The faults of -faults: the shares of the API's answers that are a
	// 503, and of its connections that are reset.
	faultUnavailable = 0.2
	faultReset       = 0.05

	maxCalls       = 1_000_000 // results are held in memory
	maxRate        = 1_000_000 // a pacer interval of at least a microsecond
	maxConcurrency = 10_000
	maxMargin      = 0.5 // exclusive
)

// config is what the flags ask for.
type config struct {
	calls       int           // -n: calls to make, one per item
	rate        int           // -rate: the API's limit, requests in any 1 s
	margin      float64       // -margin: the client paces at rate × (1 − margin)
	concurrency int           // -concurrency: calls in flight at most
	url         string        // -url: the API to call; empty starts the local one
	mismatch    bool          // -mismatch: pace the client at mismatchFactor × rate
	journal     string        // -journal: JSON Lines file that makes the run resumable
	timeout     time.Duration // -timeout: longest one call may take, its retries included
	faults      bool          // -faults: a flaky local API, and the calls are charges (POST)
	report      string        // -report: HTML file the run's picture is written to
}

// clientRate returns the pace, in calls per second, the client keeps.
func (c config) clientRate() float64 {
	if c.mismatch {
		return float64(c.rate) * mismatchFactor
	}
	return float64(c.rate) * (1 - c.margin)
}

// flagSet returns the demo's flags, bound to c.
func flagSet(c *config) *flag.FlagSet {
	fs := flag.NewFlagSet("batch", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by run, on one line
	fs.Usage = func() {}
	fs.IntVar(&c.calls, "n", defaultCalls, fmt.Sprintf("number of calls, one per item (1 to %d)", maxCalls))
	fs.IntVar(&c.rate, "rate", defaultRate, fmt.Sprintf("the API's limit: requests allowed in any 1-second window (1 to %d)", maxRate))
	fs.Float64Var(&c.margin, "margin", defaultMargin, "extra safety margin: the client paces at rate × (1 − margin); at least 0, below 0.5 (0: exactly the API's limit)")
	fs.IntVar(&c.concurrency, "concurrency", defaultConcurrency, fmt.Sprintf("calls in flight at most (1 to %d)", maxConcurrency))
	fs.StringVar(&c.url, "url", "", "call this http(s) URL instead of starting a local API; \"{i}\" in it becomes the item's number")
	fs.BoolVar(&c.mismatch, "mismatch", false, fmt.Sprintf("pace the client at %g× the API's limit, to watch 429s and host pauses at work (not with -margin)", mismatchFactor))
	fs.StringVar(&c.journal, "journal", "", "JSON Lines journal of finished items: a run started again with the same file skips them")
	fs.BoolVar(&c.faults, "faults", false, fmt.Sprintf("a flaky local API: %g%% of answers 503, %g%% of connections reset (half after the charge was applied); the calls are charges (POST) with batch.HTTP's Idempotency-Key (not with -url)", 100*faultUnavailable, 100*faultReset))
	fs.StringVar(&c.report, "report", "", "write a picture of the run to this HTML file: requests per second against the limit, 429s and pauses (batch.Report.WriteHTML)")
	fs.DurationVar(&c.timeout, "timeout", defaultTimeout, "longest one call may take, the Transport's waits and retries included; a call that takes longer fails")
	return fs
}

// usage writes the help text to w.
func usage(w io.Writer) {
	fmt.Fprint(w, `Usage: go run ./examples/batch [flags]

Starts a local API that allows at most -rate requests in any second, then
sends -n calls through a paced pace.Transport with batch.Run, and prints
progress and a summary. Exit code 0 if every call succeeded, 1 if any failed
or was not done (interrupted or never started), 2 for bad flags.

Flags:
`)
	fs := flagSet(new(config))
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// parseArgs returns the configuration args ask for. The error is
// flag.ErrHelp for -h, or one line saying what is wrong.
func parseArgs(args []string) (config, error) {
	var c config
	fs := flagSet(&c)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q: every setting is a flag", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case c.calls < 1 || c.calls > maxCalls:
		return c, fmt.Errorf("-n must be from 1 to %d calls, got %d", maxCalls, c.calls)
	case c.rate < 1 || c.rate > maxRate:
		return c, fmt.Errorf("-rate must be from 1 to %d requests per second, got %d", maxRate, c.rate)
	case !(c.margin >= 0 && c.margin < maxMargin): // false for NaN too
		return c, fmt.Errorf("-margin must be at least 0 and below %g, got %g", maxMargin, c.margin)
	case c.concurrency < 1 || c.concurrency > maxConcurrency:
		return c, fmt.Errorf("-concurrency must be from 1 to %d, got %d", maxConcurrency, c.concurrency)
	case c.timeout <= 0:
		return c, fmt.Errorf("-timeout must be positive, got %v", c.timeout)
	case c.faults && set["url"]:
		return c, errors.New("-faults and -url do not go together: -faults makes the local API flaky")
	case c.mismatch && set["margin"]:
		return c, errors.New("-margin and -mismatch do not go together: -mismatch sets the client's pace")
	}
	if set["url"] {
		if err := checkURL(c.url); err != nil {
			return c, err
		}
	}
	if c.journal != "" {
		if err := checkJournal(c.journal); err != nil {
			return c, err
		}
	}
	if c.report != "" {
		if err := checkReport(c.report); err != nil {
			return c, err
		}
	}
	return c, nil
}

// checkJournal reports, on one line, why path cannot be the journal: it
// must be a regular file that can be opened for reading and writing, or
// not exist yet in a directory that does. (batch.Run creates it, and may
// still refuse it: if it is not a journal, or another run holds it.)
func checkJournal(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		dir := filepath.Dir(path)
		if di, err := os.Stat(dir); err != nil || !di.IsDir() {
			return fmt.Errorf("-journal %q: directory %q does not exist", path, dir)
		}
		return nil
	case err != nil:
		return fmt.Errorf("-journal %q: %v", path, oneLine(err))
	case fi.IsDir():
		return fmt.Errorf("-journal %q is a directory, want a file", path)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("-journal %q is not a regular file", path)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("-journal %q: %v", path, oneLine(err))
	}
	return f.Close()
}

// checkReport reports, on one line, why path cannot be the report: it
// must not be a directory, and its directory must exist.
func checkReport(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("-report %q is a directory, want a file", path)
	}
	dir := filepath.Dir(path)
	if di, err := os.Stat(dir); err != nil || !di.IsDir() {
		return fmt.Errorf("-report %q: directory %q does not exist", path, dir)
	}
	return nil
}

// oneLine returns err's message without the path an *fs.PathError repeats.
func oneLine(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// checkURL reports, on one line, why raw is not an absolute http or https
// URL with a host.
func checkURL(raw string) error {
	u, err := url.Parse(itemURL(raw, 0))
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("malformed -url %q: %v", raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("malformed -url %q: want an absolute http:// or https:// URL with a host", raw)
	}
	if u.Port() == "" && strings.HasSuffix(u.Host, ":") {
		return fmt.Errorf("malformed -url %q: empty port", raw)
	}
	return nil
}

// itemURL returns the URL of item i: tmpl with "{i}" replaced by i.
func itemURL(tmpl string, i int) string {
	return strings.ReplaceAll(tmpl, "{i}", fmt.Sprint(i))
}
