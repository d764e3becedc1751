package pace_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"

	"github.com/cenkalti/backoff/v4"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/retry"
)

// noWait is a backoff schedule that retries at once.
func noWait() backoff.BackOff { return &backoff.ZeroBackOff{} }

// A Transport inside an http.Client retries a throttled request after the
// delay the server asked for, and tells the observer what it did.
func ExampleTransport() {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "0") // "try again now": the host still pauses for retry.MinThrottlePause
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		io.WriteString(w, "hello")
	}))
	defer srv.Close()

	tr := &pace.Transport{
		Retry: retry.Policy{MaxAttempts: 4},
		OnEvent: func(e pace.Event) {
			fmt.Printf("%s after attempt %d: status %d (%s)\n", e.Kind, e.Attempt, e.StatusCode, e.Reason)
		},
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	resp, err := client.Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body), "after", calls.Load(), "attempts")
	// Output:
	// throttle after attempt 1: status 429 ()
	// retry after attempt 1: status 429 (server-delay)
	// 200 hello after 2 attempts
}

// When every attempt fails on a status, the last response comes back as it
// came; the caller's own status handling still works.
func ExampleTransport_lastResponse() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "0")
		http.Error(w, "busy", http.StatusServiceUnavailable)
	}))
	defer srv.Close()

	tr := &pace.Transport{Retry: retry.Policy{MaxAttempts: 3}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Printf("%d %s", resp.StatusCode, body)
	// Output:
	// 503 busy
}

// A transport error that outlasts the attempts is an *AttemptsError that
// records them and unwraps to the last error.
func ExampleAttemptsError() {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens any more: connection refused

	tr := &pace.Transport{Retry: retry.Policy{MaxAttempts: 2, NewBackOff: noWait}}
	defer tr.CloseIdleConnections()
	_, err := (&http.Client{Transport: tr}).Get(url)
	var ae *pace.AttemptsError
	if errors.As(err, &ae) {
		fmt.Println("attempts:", ae.Attempts)
	}
	// Output:
	// attempts: 2
}

// Limits are chosen by host: here one API is paced to 100 requests a
// second with up to 10 callers waiting, every other host to 600 a minute
// in bursts of 20, and an internal host not at all.
func ExampleHosts() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()

	tr := &pace.Transport{
		Limits: pace.Hosts{
			strings.TrimPrefix(srv.URL, "http://"): {Limit: pace.LeakyBucket(pace.PerSecond(100), pace.LeakyOptions{Queue: 10})},
			"*":                                    {Limit: pace.TokenBucket(pace.PerMinute(600), 20)},
			"internal.example":                     {}, // not paced
		},
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	for range 3 {
		resp, err := client.Get(srv.URL)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		fmt.Println(resp.StatusCode)
	}
	// Output:
	// 200
	// 200
	// 200
}

// Validate reports a setting that can never work, as RoundTrip would.
func ExampleTransport_Validate() {
	tr := &pace.Transport{Limits: pace.Hosts{"api.example": {Limit: pace.TokenBucket(pace.PerSecond(0), 1)}}}
	err := tr.Validate()
	fmt.Println(errors.Is(err, pace.ErrInvalidConfig))
	fmt.Println(err)
	// Output:
	// true
	// pace: invalid Limits["api.example"].Rate.N 0: must be positive
}
