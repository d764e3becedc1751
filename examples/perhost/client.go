package main

import (
	"net/http"
	"sync"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/retry"
)

// limits paces each host by its own contract; see the package
// documentation.
var limits = pace.Hosts{
	"api.payments.example": {Limit: pace.LeakyBucket(pace.PerSecond(5), pace.LeakyOptions{Queue: 10})},
	"api.search.example":   {Limit: pace.TokenBucket(pace.PerSecond(20), 5)},
	"internal.example":     {}, // the zero Host: not paced
	pace.DefaultHost:       {Limit: pace.LeakyBucket(pace.PerSecond(10), pace.LeakyOptions{Queue: 10})},
}

// limitOf describes the limit a host is paced by.
func limitOf(host string) string {
	if l, ok := limits[host]; ok {
		return l.Limit.String()
	}
	return "default (\"*\"): " + limits[pace.DefaultHost].Limit.String()
}

// waits counts, per host, the requests that waited at least a millisecond
// for their host's limit, as Transport.OnEvent reports them.
type waits struct {
	mu sync.Mutex
	n  map[string]int
}

func (w *waits) onEvent(ev pace.Event) {
	if ev.Kind == pace.EventWait && ev.Reason == retry.ReasonLimit && ev.Delay >= minWait {
		w.mu.Lock()
		w.n[ev.Key]++
		w.mu.Unlock()
	}
}

func (w *waits) of(host string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n[host]
}

// newClient returns a client paced by limits that sends through base.
func newClient(base http.RoundTripper, w *waits) (*http.Client, error) {
	t := &pace.Transport{Base: base, Limits: limits, OnEvent: w.onEvent}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return &http.Client{Transport: t}, nil
}
