package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestFlagErrors checks that every bad flag value is refused with exit code
// 2 and one line on stderr naming the flag, before anything starts.
func TestFlagErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // in the error line
	}{
		{"zero calls", []string{"-n", "0"}, "-n must be"},
		{"negative calls", []string{"-n", "-5"}, "-n must be"},
		{"too many calls", []string{"-n", "1000001"}, "-n must be"},
		{"calls not a number", []string{"-n", "many"}, "-n"},
		{"zero rate", []string{"-rate", "0"}, "-rate must be"},
		{"negative rate", []string{"-rate", "-3"}, "-rate must be"},
		{"rate too high", []string{"-rate", "1000001"}, "-rate must be"},
		{"fractional rate", []string{"-rate", "2.5"}, "-rate"},
		{"negative margin", []string{"-margin", "-0.1"}, "-margin must be"},
		{"margin one half", []string{"-margin", "0.5"}, "-margin must be"},
		{"margin NaN", []string{"-margin", "NaN"}, "-margin must be"},
		{"margin infinite", []string{"-margin", "+Inf"}, "-margin must be"},
		{"margin with mismatch", []string{"-mismatch", "-margin", "0.1"}, "-mismatch"},
		{"faults with url", []string{"-faults", "-url", "http://example.com/"}, "-faults and -url"},
		{"zero concurrency", []string{"-concurrency", "0"}, "-concurrency must be"},
		{"negative concurrency", []string{"-concurrency", "-1"}, "-concurrency must be"},
		{"URL without scheme", []string{"-url", "::bad"}, "malformed -url"},
		{"URL bad host", []string{"-url", "http://[::1"}, "malformed -url"},
		{"URL not http", []string{"-url", "ftp://example.com/"}, "malformed -url"},
		{"URL relative", []string{"-url", "/items/{i}"}, "malformed -url"},
		{"URL empty", []string{"-url", ""}, "malformed -url"},
		{"URL newline", []string{"-url", "http://example.com/\nx"}, "malformed -url"},
		{"unknown flag", []string{"-nope"}, "-nope"},
		{"missing value", []string{"-n"}, "-n"},
		{"stray argument", []string{"300"}, "unexpected argument"},
		{"zero timeout", []string{"-timeout", "0s"}, "-timeout must be positive"},
		{"negative timeout", []string{"-timeout", "-1s"}, "-timeout must be positive"},
		{"timeout without unit", []string{"-timeout", "30"}, "-timeout"},
		{"timeout not a duration", []string{"-timeout", "soon"}, "-timeout"},
		{"report in no directory", []string{"-report", "/no/such/dir/report.html"}, "-report"},
		{"report a directory", []string{"-report", os.TempDir()}, "-report"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(t.Context(), tt.args, &stdout, &stderr); code != 2 {
				t.Errorf("run(%q) = %d, want 2", tt.args, code)
			}
			msg := stderr.String()
			if strings.Count(msg, "\n") != 1 || !strings.HasSuffix(msg, "\n") {
				t.Errorf("run(%q) wrote %q to stderr, want one line", tt.args, msg)
			}
			if !strings.Contains(msg, tt.want) {
				t.Errorf("run(%q) error %q does not mention %q", tt.args, msg, tt.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("run(%q) wrote %q to stdout, want nothing", tt.args, stdout.String())
			}
		})
	}
}

// TestJournalFlagErrors checks that a -journal path that cannot be a
// journal is refused with the other bad flags: exit code 2, one line on
// stderr, nothing on stdout (no header printed first).
func TestJournalFlagErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, want string
	}{
		{"a directory", dir, "is a directory"},
		{"in a missing directory", filepath.Join(dir, "missing", "run.jsonl"), "does not exist"},
		{"under a file", filepath.Join(file, "run.jsonl"), "-journal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runArgs(t, t.Context(), "-n", "3", "-journal", tt.path)
			if code != 2 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tt.want) {
				t.Errorf("run(-journal %s) = %d, stdout %q, stderr %q; want 2, nothing, one line saying %q",
					tt.path, code, stdout, stderr, tt.want)
			}
		})
	}
	if _, err := parseArgs([]string{"-journal", filepath.Join(dir, "new.jsonl")}); err != nil {
		t.Errorf("a new file in an existing directory: %v", err)
	}
	if _, err := parseArgs([]string{"-journal", file}); err != nil {
		t.Errorf("an existing file: %v", err)
	}
}

// TestHelp checks that -h documents every flag on stdout and exits 0.
func TestHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"-h"}, &stdout, &stderr); code != 0 {
		t.Errorf("run(-h) = %d, want 0", code)
	}
	for _, f := range []string{"-n", "-rate", "-margin", "-concurrency", "-url", "-mismatch", "-journal", "-timeout"} {
		if !strings.Contains(stdout.String(), "\n  "+f+" ") && !strings.Contains(stdout.String(), "\n  "+f+"\n") {
			t.Errorf("-h does not document %s:\n%s", f, stdout.String())
		}
	}
	if stderr.Len() != 0 {
		t.Errorf("run(-h) wrote %q to stderr", stderr.String())
	}
}

// runArgs runs the program with args and returns its exit code and output.
func runArgs(t *testing.T, ctx context.Context, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

// mustConfig parses args or fails the test.
func mustConfig(t *testing.T, args ...string) config {
	t.Helper()
	cfg, err := parseArgs(args)
	if err != nil {
		t.Fatalf("parseArgs(%q): %v", args, err)
	}
	return cfg
}

// TestRunClean runs a short batch against the local API and checks the
// counts: every call succeeded, none lost, every request the API admitted
// was a success and every 429 it sent reached the client, and the summary
// says so. No timing is asserted.
func TestRunClean(t *testing.T) {
	code, stdout, stderr := runArgs(t, t.Context(), "-n", "40", "-rate", "200", "-concurrency", "4")
	if code != 0 {
		t.Fatalf("exit code %d, want 0; stderr %q; stdout:\n%s", code, stderr, stdout)
	}
	if stderr != "" {
		t.Errorf("stderr = %q, want nothing on a clean run", stderr)
	}
	for _, line := range []string{
		"\nsummary\n", "\n  items      40\n", "\n  succeeded  40\n", "\n  failed     0\n", "\n  not done   0\n",
		"\n  429s       ", "\n  retried    ", "\n  elapsed    ", "\n  ideal      ", "\nOK: all 40 calls succeeded, none lost\n",
	} {
		if !strings.Contains(stdout, line) {
			t.Errorf("summary lacks %q:\n%s", line, stdout)
		}
	}

	tl, err := execute(t.Context(), mustConfig(t, "-n", "40", "-rate", "200"), new(bytes.Buffer))
	if err != nil {
		t.Fatal(err)
	}
	if tl.Items != 40 || tl.Succeeded != 40 || tl.Failed != 0 || tl.notDone() != 0 || tl.err != nil {
		t.Errorf("items %d, succeeded %d, failed %d, lost %d, err %v; want 40, 40, 0, 0, nil",
			tl.Items, tl.Succeeded, tl.Failed, tl.notDone(), tl.err)
	}
	if tl.admitted != 40 {
		t.Errorf("the API admitted %d requests, want 40 (one per item)", tl.admitted)
	}
	if tl.refused != tl.client429 {
		t.Errorf("the API sent %d 429s, the client saw %d", tl.refused, tl.client429)
	}
	if want := ideal(40, 200); tl.Ideal != want {
		t.Errorf("ideal %v, want %v", tl.Ideal, want)
	}
}

// TestRunMismatch runs a client paced 1.5× faster than the API allows: it
// must meet 429s, pause the host and retry, and still lose nothing and fail
// nothing.
func TestRunMismatch(t *testing.T) {
	// 30 calls at 30/s against 20 in any second: call 21 leaves 0.67 s
	// after call 1 and is refused; the host pauses for the Retry-After (1 s).
	var stdout bytes.Buffer
	tl, err := execute(t.Context(), mustConfig(t, "-n", "30", "-rate", "20", "-mismatch"), &stdout)
	if err != nil {
		t.Fatal(err)
	}
	if tl.Succeeded != 30 || tl.Failed != 0 || tl.notDone() != 0 || tl.err != nil {
		t.Errorf("succeeded %d, failed %d, lost %d, err %v; want 30, 0, 0, nil", tl.Succeeded, tl.Failed, tl.notDone(), tl.err)
	}
	if tl.refused < 1 || tl.client429 < 1 || tl.pauses < 1 {
		t.Errorf("API refused %d, client saw %d 429s and paused %d times; want at least 1 each", tl.refused, tl.client429, tl.pauses)
	}
	if tl.refused != tl.client429 {
		t.Errorf("the API sent %d 429s, the client saw %d", tl.refused, tl.client429)
	}
	if tl.admitted != 30 {
		t.Errorf("the API admitted %d requests, want 30", tl.admitted)
	}
	if got := tl.transportRetries + int64(tl.Retries); got < tl.client429 {
		t.Errorf("%d retries for %d 429s: every throttled call must be sent again", got, tl.client429)
	}
	// The progress printer counts only what reached the batch (here no 429
	// did, so its retries and pauses are 0); its lines must say so, lest
	// they seem to contradict the summary's retries and host pauses.
	var progressLine bool
	for line := range strings.Lines(stdout.String()) {
		if strings.Contains(line, "items: ") && !strings.HasPrefix(line, "batch-level done: ") {
			t.Errorf("unlabelled batch summary line %q", line)
		}
		progressLine = progressLine || strings.HasPrefix(line, "batch-level done: ")
	}
	if !progressLine {
		t.Errorf("no \"batch-level done: \" line:\n%s", stdout.String())
	}
}

// TestRunReport: -report writes the run's picture, a page with the host's
// chart, its 429 marked, and as many requests sent as the API counted.
func TestRunReport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "report.html")
	var stdout bytes.Buffer
	tl, err := execute(t.Context(), mustConfig(t, "-n", "30", "-rate", "20", "-mismatch", "-report", path), &stdout)
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<svg class="key"`, `class="sent"`, `class="throttle"`, fmt.Sprintf("sent %d,", tl.admitted+tl.refused)} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report lacks %q:\n%s", want, page)
		}
	}
	stdout.Reset()
	tl.print(&stdout)
	if !strings.Contains(stdout.String(), "report  "+path) {
		t.Errorf("the summary does not name the report:\n%s", stdout.String())
	}
}

// TestRunJournal runs a batch with a journal twice: the second run finds
// every item done and sends nothing.
func TestRunJournal(t *testing.T) {
	journal := filepath.Join(t.TempDir(), "run.jsonl")
	cfg := mustConfig(t, "-n", "20", "-rate", "400", "-journal", journal)
	first, err := execute(t.Context(), cfg, new(bytes.Buffer))
	if err != nil {
		t.Fatal(err)
	}
	second, err := execute(t.Context(), cfg, new(bytes.Buffer))
	if err != nil {
		t.Fatal(err)
	}
	if first.Succeeded != 20 || first.admitted != 20 {
		t.Errorf("first run: %d succeeded, %d admitted; want 20, 20", first.Succeeded, first.admitted)
	}
	if second.Succeeded != 20 || second.Resumed != 20 || second.admitted != 0 || !second.ok() {
		t.Errorf("second run: %d succeeded, %d resumed, %d admitted, ok %v; want 20, 20, 0, true",
			second.Succeeded, second.Resumed, second.admitted, second.ok())
	}
}

// hits is a test API that records the paths it serves and answers status.
type hits struct {
	mu     sync.Mutex
	paths  map[string]int
	status int
}

func (h *hits) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.paths[r.URL.Path]++
	h.mu.Unlock()
	w.WriteHeader(h.status)
}

// TestRunURL aims the program at another API with -url: no local API, one
// GET per item with "{i}" replaced by the item's number.
func TestRunURL(t *testing.T) {
	h := &hits{paths: map[string]int{}, status: http.StatusNoContent}
	srv := httptest.NewServer(h)
	defer srv.Close()
	code, stdout, stderr := runArgs(t, t.Context(), "-url", srv.URL+"/things/{i}", "-n", "12", "-rate", "500")
	if code != 0 {
		t.Fatalf("exit code %d, want 0; stderr %q; stdout:\n%s", code, stderr, stdout)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.paths) != 12 {
		t.Errorf("the API saw %d distinct paths, want 12: %v", len(h.paths), h.paths)
	}
	for i := range 12 {
		if p := fmt.Sprintf("/things/%d", i); h.paths[p] != 1 {
			t.Errorf("%s requested %d times, want 1", p, h.paths[p])
		}
	}
	if !strings.Contains(stdout, "remote API's own count is unknown") {
		t.Errorf("summary does not say the API's count is unknown:\n%s", stdout)
	}
}

// TestRunFailures checks the exit code when calls fail: 1, with NOT OK in
// the summary and the first failure on stderr.
func TestRunFailures(t *testing.T) {
	h := &hits{paths: map[string]int{}, status: http.StatusNotFound} // final: not retried
	srv := httptest.NewServer(h)
	defer srv.Close()
	code, stdout, stderr := runArgs(t, t.Context(), "-url", srv.URL, "-n", "3", "-rate", "500")
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if !strings.Contains(stdout, "\n  failed     3\n") || !strings.Contains(stdout, "NOT OK: 3 failed, 0 in doubt, 0 not done") {
		t.Errorf("summary does not report 3 failures:\n%s", stdout)
	}
	if !strings.Contains(stderr, "404") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("stderr = %q, want one line naming the 404", stderr)
	}
}

// TestRunCancelled checks that a run whose context is already done starts
// nothing, reports every item not done and exits 1.
func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	code, stdout, _ := runArgs(t, ctx, "-n", "5")
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if !strings.Contains(stdout, "\n  not done   5 (interrupted or not started; ") {
		t.Errorf("summary does not report 5 not done:\n%s", stdout)
	}
}

// TestRunCancelledJournal: with -journal, the items a cancelled run did not
// do are not called lost: the summary says a run with the same journal
// does them.
func TestRunCancelledJournal(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	journal := filepath.Join(t.TempDir(), "run.jsonl")
	code, stdout, _ := runArgs(t, ctx, "-n", "5", "-journal", journal)
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if !strings.Contains(stdout, "\n  not done   5 (interrupted or not started; a run with the same -journal does them") ||
		!strings.Contains(stdout, "\nNOT OK: 0 failed, 0 in doubt, 5 not done (run again with the same -journal to do them)\n") ||
		strings.Contains(stdout, "lost") {
		t.Errorf("summary does not say the 5 items not done will be resumed:\n%s", stdout)
	}
}

// TestRunTimeout aims the program at an API that accepts connections and
// never answers: each call fails after -timeout, and the program exits 1
// with one line on stderr. Without a timeout it would wait for ever (here,
// until the test's guard deadline, which would leave the items not done).
func TestRunTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	})
	defer func() {
		ln.Close()
		wg.Wait()
		for _, c := range conns {
			c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // the guard
	defer cancel()
	code, stdout, stderr := runArgs(t, ctx, "-url", "http://"+ln.Addr().String()+"/items/{i}", "-n", "3", "-timeout", "100ms")
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if !strings.Contains(stdout, "\n  failed     3\n") || !strings.Contains(stdout, "\n  not done   0\n") {
		t.Errorf("summary does not report 3 failed, 0 not done:\n%s", stdout)
	}
	if strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "no answer within -timeout 100ms") {
		t.Errorf("stderr = %q, want one line naming the timeout", stderr)
	}
}

// TestRunSetupError checks that a run that cannot start (here, a journal
// that is not one: flag checks cannot see that) exits 1 with one line on
// stderr, prefixed once.
func TestRunSetupError(t *testing.T) {
	journal := filepath.Join(t.TempDir(), "run.jsonl")
	if err := os.WriteFile(journal, []byte("not a journal\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runArgs(t, t.Context(), "-n", "3", "-journal", journal)
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "batch: ") || strings.Contains(stderr, "batch: batch:") {
		t.Errorf("stderr = %q, want one line starting with one \"batch: \"", stderr)
	}
}

// TestRunFaults runs the demo against its flaky API (-faults): 503s and
// connection resets, some after the charge was applied. Every charge
// succeeds, none is charged twice (the API's own count), and the summary
// says how many items were retried, in doubt, failed and done.
func TestRunFaults(t *testing.T) {
	code, stdout, stderr := runArgs(t, t.Context(), "-n", "40", "-rate", "200", "-faults")
	if code != 0 {
		t.Fatalf("exit code %d, want 0; stderr %q; stdout:\n%s", code, stderr, stdout)
	}
	for _, line := range []string{
		"\n  succeeded  40\n", "\n  failed     0\n", "\n  in doubt   0 ", "\n  retried    ", "\n  faults     ",
		"charged twice: 0 (the API's count)", "\nOK: all 40 calls succeeded, none lost\n",
	} {
		if !strings.Contains(stdout, line) {
			t.Errorf("summary lacks %q:\n%s", line, stdout)
		}
	}

	tl, err := execute(t.Context(), mustConfig(t, "-n", "60", "-rate", "200", "-faults"), new(bytes.Buffer))
	if err != nil {
		t.Fatal(err)
	}
	if tl.Succeeded != 60 || tl.chargedTwice != 0 || tl.unavailable+tl.resets == 0 || tl.retriedItems == 0 {
		t.Errorf("succeeded %d, charged twice %d, faults %d+%d, retried items %d; want 60, 0, some, some",
			tl.Succeeded, tl.chargedTwice, tl.unavailable, tl.resets, tl.retriedItems)
	}
	t.Logf("60 charges: %d answered 503, %d resets (%d after applying), %d items retried, %d requeued, elapsed %v",
		tl.unavailable, tl.resets, tl.resetsAfter, tl.retriedItems, tl.Requeued, tl.Elapsed)
}
