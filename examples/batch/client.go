package main

import (
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pacehttp/pace"
)

// clientCounts is what the client's Transport reported through OnEvent.
type clientCounts struct {
	seen429 atomic.Int64 // 429 responses received, retried or handed back
	pauses  atomic.Int64 // times a 429 paused the whole host
	retries atomic.Int64 // attempts the Transport sent again
	urls    sync.Map     // the URLs of the calls the Transport sent again
}

// retried reports whether the Transport sent a call to url again.
func (c *clientCounts) retried(url string) bool {
	_, ok := c.urls.Load(url)
	return ok
}

// onEvent counts ev. Every 429 the Transport receives is an EventThrottle
// carrying the status, which pauses the whole key; the Transport then
// sends it again (EventRetry) or hands it back to the batch, which waits
// out the pause in its own line. It is safe for concurrent use.
func (c *clientCounts) onEvent(ev pace.Event) {
	switch ev.Kind {
	case pace.EventThrottle:
		c.pauses.Add(1)
		if ev.StatusCode == http.StatusTooManyRequests {
			c.seen429.Add(1)
		}
	case pace.EventRetry:
		c.retries.Add(1)
		if ev.Request != nil && ev.Request.URL != nil {
			c.urls.Store(ev.Request.URL.String(), true)
		}
	}
}

// pacing returns the leaky-bucket rate for perSecond calls a second: one
// call every 1/perSecond, rounded up to a whole nanosecond so that the
// client never goes faster than asked.
func pacing(perSecond float64) pace.Rate {
	return pace.Every(time.Duration(math.Ceil(float64(time.Second) / perSecond)))
}

// newClient returns an http.Client for host whose pace.Transport paces
// that host with a leaky bucket at r, lets every call wait for its turn
// (bounded by the Transport's MaxWait, 5 minutes, and timeout), and
// reports to counts. A call that takes longer than timeout, its
// waits and retries included, fails (http.Client.Timeout): an API that never
// answers cannot hang the batch. base sends the requests; the caller closes
// its idle connections when done.
func newClient(host string, r pace.Rate, timeout time.Duration, base *http.Transport, counts *clientCounts) (*http.Client, error) {
	t := &pace.Transport{
		Base: base,
		Limits: pace.Hosts{
			// Calls leave one every r.Interval(), evenly: against an API
			// that allows N in any second, N calls never fall within one
			// second if the interval is at least 1/N. The zero Queue
			// bounds the waiters by time only: a queue of the batch's
			// concurrency was refused now and then under load, when late
			// departures stretched the slots ahead of a waiter.
			host: {Limit: pace.LeakyBucket(r, pace.LeakyOptions{})},
		},
		OnEvent: counts.onEvent,
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return &http.Client{Transport: t, Timeout: timeout}, nil
}

// newBase returns the Transport that sends the calls: http.DefaultTransport's
// settings, with enough idle connections kept that calls in flight do not
// open new ones (a new connection's handshake makes a request leave late,
// which pushes the host's later slots back).
func newBase(concurrency int) *http.Transport {
	b := http.DefaultTransport.(*http.Transport).Clone()
	b.MaxIdleConnsPerHost = concurrency
	return b
}
