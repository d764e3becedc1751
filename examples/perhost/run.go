package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// hosts are the hosts the program calls: three listed in limits, two not.
var hosts = []string{"api.payments.example", "api.search.example", "internal.example", "maps.example", "cdn.example"}

// perHost is how many requests go to each host, all at once.
const perHost = 6

// minWait is the shortest limiter wait counted as one: well above
// scheduling noise on a loaded machine, well below the shortest real wait
// here (50ms, the search host's 20/s bucket).
const minWait = 20 * time.Millisecond

// report is what the server and the client saw, per host.
type report struct {
	arrivals map[string][]time.Time // at the server
	waits    map[string]int         // requests that waited for their limit
	errs     []error
}

// run checks args, sends perHost requests to each host at once through one
// paced client, prints the arrivals per host, and returns the exit code: 0
// if every request was answered, 1 if not, 2 for a flag or argument (one
// line on stderr).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	switch err := parseArgs(args); {
	case errors.Is(err, flag.ErrHelp):
		usage(stdout)
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "perhost: %v (see -h)\n", err)
		return 2
	}
	rep, err := send(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "perhost: %v\n", err)
		return 1
	}
	rep.print(stdout)
	if len(rep.errs) > 0 {
		fmt.Fprintf(stdout, "%d requests failed, the first: %v\n", len(rep.errs), rep.errs[0])
		return 1
	}
	return 0
}

// send starts the server and sends every request.
func send(ctx context.Context) (report, error) {
	rec := newRecorder()
	defer rec.close()
	base := dialer(rec.srv.Listener.Addr().String())
	defer base.CloseIdleConnections()
	w := &waits{n: map[string]int{}}
	client, err := newClient(base, w)
	if err != nil {
		return report{}, err
	}

	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, h := range hosts {
		for i := range perHost {
			wg.Go(func() {
				if err := get(ctx, client, fmt.Sprintf("http://%s/items/%d", h, i)); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()

	rep := report{arrivals: map[string][]time.Time{}, waits: map[string]int{}, errs: errs}
	for _, h := range hosts {
		rep.arrivals[h] = rec.arrivalsOf(h)
		rep.waits[h] = w.of(h)
	}
	return rep, nil
}

// get sends one GET and checks for a 2xx answer.
func get(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	return nil
}

// print writes, per host, its limit and the arrivals the server saw, in
// milliseconds after the first request of the whole run.
func (r report) print(w io.Writer) {
	var start time.Time
	for _, as := range r.arrivals {
		if len(as) > 0 && (start.IsZero() || as[0].Before(start)) {
			start = as[0]
		}
	}
	fmt.Fprintf(w, "%d requests to each host at once, through one client; arrivals at the server, in ms after the first:\n\n", perHost)
	for _, h := range hosts {
		as := r.arrivals[h]
		ms := make([]string, len(as))
		for i, t := range as {
			ms[i] = fmt.Sprint(t.Sub(start).Milliseconds())
		}
		fmt.Fprintf(w, "%-21s %s\n", h, limitOf(h))
		fmt.Fprintf(w, "%-21s %d requests, %d waited for the limit; arrivals: %s\n\n", "", len(as), r.waits[h], strings.Join(ms, " "))
	}
}
