package redislimit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// warmTimes bounds a warm-up, and a reconnection of the subscription, at
// warmTimes × Options.Timeout: a dial, go-redis's handshake (HELLO, CLIENT
// SETINFO, and more with RESP3) and a SCRIPT LOAD are about five round
// trips, each within Timeout when Redis answers in time.
const warmTimes = 8

// probeGap is how long the prober waits between two warm-ups that failed.
const probeGap = 10 * time.Millisecond

// maxWarm bounds the connections one warm-up readies.
const maxWarm = 64

// errNoLink is the cause of a decision made while no connection answers.
var errNoLink = fmt.Errorf("%w: no connection to Redis answers yet", ErrUnavailable)

// link keeps the Limiter's connections to Redis ready, so that
// Options.Timeout bounds a script's round trip only. go-redis makes a
// connection inside the command that needs one, under its context: a
// decision's deadline would bound the dial, the handshake and the
// script's load as well, and throw away the half-made connection when
// Redis is a few round trips away. So a prober, off any decision, readies
// connections: it loads the scripts (SCRIPT LOAD) on as many connections
// at once as round trips were ever in flight, with a bound of warmTimes
// × Timeout. It runs at New, and whenever a round trip failed for want
// of Redis (not for a reply of Redis's). One such failure alone (a reply
// late once, when Redis is a few milliseconds inside Timeout) only
// readies a new connection: the link stays up. Two in a row, or a
// warm-up that fails, take the link down until a warm-up succeeds:
// decisions wait for it, at most Timeout, then fail
// (errNoLink), and make no connection of their own. So go-redis's pool
// counts no failed dials of theirs, and never falls back to its own
// probe once a second; the prober tries again every probeGap. Only a
// *redis.Client's link goes down: a Cluster's or Ring's nodes fail one
// by one, so their decisions never wait, and each failure warms once.
type link struct {
	base    context.Context // cancelled by Close: a warm-up in progress ends
	rdb     redis.UniversalClient
	timeout time.Duration
	scripts []*redis.Script
	stop    <-chan struct{}
	gate    bool // decisions wait for the link (a *redis.Client)

	st         atomic.Pointer[linkState]
	busy, peak atomic.Int32 // round trips in flight, now and at most
	fails      atomic.Int32 // round trips failed for want of Redis in a row
	mu         sync.Mutex   // guards probing
	probing    bool
	closed     bool           // by close: no prober starts
	once       atomic.Bool    // the link was up once
	first      chan struct{}  // closed when the first warm-up ends, up or not
	wg         sync.WaitGroup // the prober
}

// linkState is the link up, or down until ch is closed.
type linkState struct {
	up bool
	ch chan struct{}
}

// init sets the link up for rdb and starts its first warm-up.
func (k *link) init(base context.Context, rdb redis.UniversalClient, timeout time.Duration, stop <-chan struct{}, scripts ...*redis.Script) {
	k.base, k.rdb, k.timeout, k.stop, k.scripts = base, rdb, timeout, stop, scripts
	k.first = make(chan struct{})
	_, k.gate = rdb.(*redis.Client)
	k.st.Store(&linkState{up: !k.gate, ch: make(chan struct{})})
	k.down(true)
}

// ready waits until the link is up, at most Timeout, or until ctx ends.
// During a new Limiter's first warm-up it waits for that warm-up to end
// instead, at most warmTimes × Timeout. A warm-up that failed leaves the
// next decisions the Timeout of a link that went down, not warmTimes ×
// Timeout each. It reports whether it waited, and errNoLink if the link
// is still down.
func (k *link) ready(ctx context.Context) (waited bool, err error) {
	s := k.st.Load()
	if s.up {
		return false, nil
	}
	d, first := k.timeout, k.first
	select {
	case <-first:
		first = nil // ended: wait as for a link that went down
	default:
		d *= warmTimes
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.ch:
		return true, nil
	case <-first:
		if k.st.Load().up {
			return true, nil
		}
	case <-t.C:
	case <-ctx.Done():
	case <-k.stop:
	}
	return true, errNoLink
}

// enter counts a round trip starting.
func (k *link) enter() {
	n := k.busy.Add(1)
	for p := k.peak.Load(); n > p && !k.peak.CompareAndSwap(p, n); p = k.peak.Load() {
	}
}

// exit counts a round trip ended with err, on behalf of a caller whose
// context is ctx. A failure that is not Redis's reply, nor the caller's
// own end, starts a warm-up; the second in a row takes the link down.
func (k *link) exit(ctx context.Context, err error) {
	k.busy.Add(-1)
	switch {
	case err == nil || !lost(err):
		if k.fails.Load() != 0 {
			k.fails.Store(0)
		}
	case ctx.Err() == nil:
		k.down(k.fails.Add(1) >= 2)
	}
}

// lost reports whether err says Redis was not reached or did not answer
// in time.
func lost(err error) bool {
	var re redis.Error
	return !errors.As(err, &re) && !errors.Is(err, redis.ErrClosed)
}

// down starts the prober unless it runs; with gate it takes the link
// down too.
func (k *link) down(gate bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return
	}
	if gate {
		k.gateLocked()
	}
	if k.probing {
		return
	}
	k.probing = true
	k.wg.Add(1)
	go k.probe()
}

// gateLocked takes a *redis.Client's link down; k.mu must be held.
func (k *link) gateLocked() {
	if k.st.Load().up && k.gate {
		k.st.Store(&linkState{ch: make(chan struct{})})
	}
}

// close waits for the prober to end, and starts no other: the link
// stays up from then on, and decisions go to Redis as they come, as
// without a link.
func (k *link) close() {
	k.mu.Lock()
	k.closed = true
	if s := k.st.Load(); !s.up {
		k.st.Store(&linkState{up: true})
		close(s.ch)
	}
	k.mu.Unlock()
	k.wg.Wait()
}

// probe warms connections until a warm-up succeeds, then brings the link
// up; it gives up when the Limiter or the client is closed.
func (k *link) probe() {
	defer k.wg.Done()
	for {
		err := k.warm()
		if err != nil && !lost(err) {
			err = nil // Redis answered, if with an error: the decision will tell
		}
		k.mu.Lock()
		if err == nil || !k.gate {
			k.once.Store(true)
			if s := k.st.Load(); !s.up {
				k.st.Store(&linkState{up: true})
				close(s.ch)
			}
		}
		select {
		case <-k.first:
		default:
			close(k.first) // after the link is up, if it came up
		}
		if err == nil || !k.gate || errors.Is(err, redis.ErrClosed) {
			k.probing = false
			k.mu.Unlock()
			return
		}
		if !k.closed {
			k.gateLocked() // Redis does not answer: decisions wait for the link
		}
		k.mu.Unlock()
		select {
		case <-k.stop:
			k.mu.Lock()
			k.probing = false
			k.mu.Unlock()
			return
		case <-time.After(probeGap):
		}
	}
}

// ping dials o's address bare and sends PING, within 2 × Timeout (a
// dial and a round trip): any reply
// (+PONG, or an error such as NOAUTH) says Redis answers. It costs
// go-redis's pool nothing: no failed dial (each of which retries for
// about 400 ms, and enough of which make the pool dial only once a
// second), and no command retried after a connection that a proxy in
// front of a dead Redis accepted and closed.
func (k *link) ping(o *redis.Options) error {
	ctx, cancel := context.WithTimeout(k.base, 2*k.timeout)
	defer cancel()
	conn, err := o.Dialer(ctx, o.Network, o.Addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := conn.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	var b [1]byte
	_, err = conn.Read(b[:])
	return err
}

// warm readies connections: SCRIPT LOAD of the scripts, one a
// connection, on as many at once as round trips were ever in flight (at
// least one per script, at most maxWarm, or a *redis.Client's PoolSize).
// A *redis.Client's Redis is asked first, bare (ping).
func (k *link) warm() error {
	n := max(int(k.peak.Load()), len(k.scripts))
	n = min(n, maxWarm)
	if c, ok := k.rdb.(*redis.Client); ok {
		o := c.Options()
		if o.PoolSize > 0 {
			n = max(min(n, o.PoolSize), 1)
		}
		if o.Dialer != nil {
			if err := k.ping(o); err != nil {
				return err
			}
		}
	}
	ctx, cancel := context.WithTimeout(k.base, warmTimes*k.timeout)
	defer cancel()
	errs := make(chan error, n)
	for i := range n {
		go func() {
			var err error
			for j := i; j < max(n, len(k.scripts)) && err == nil; j += n {
				err = k.scripts[j%len(k.scripts)].Load(ctx, k.rdb).Err()
			}
			errs <- err
		}()
	}
	var first error
	for range n {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}
