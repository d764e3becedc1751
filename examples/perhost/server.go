package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

// recorder is a loopback server that answers 204 to everything and records
// when each request arrived, by Host.
type recorder struct {
	srv *httptest.Server

	mu       sync.Mutex
	arrivals map[string][]time.Time // by Host header, in arrival order
}

func newRecorder() *recorder {
	rec := &recorder{arrivals: map[string][]time.Time{}}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		rec.mu.Lock()
		rec.arrivals[r.Host] = append(rec.arrivals[r.Host], now)
		rec.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	return rec
}

func (rec *recorder) close() { rec.srv.Close() }

// arrivalsOf returns a copy of the arrivals recorded for host.
func (rec *recorder) arrivalsOf(host string) []time.Time {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]time.Time(nil), rec.arrivals[host]...)
}

// dialer returns an http.Transport that connects to addr whatever host a
// request names, so that many host names reach one local server. The Host
// header and pace's per-host limits still see the name in the URL.
func dialer(addr string) *http.Transport {
	var d net.Dialer
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}
	return t
}
