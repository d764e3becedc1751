package redislimit

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/pacehttp/pace"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// closeBound is how long the tests let New or Close take against a Redis
// that accepts connections but does not answer. The promise is about
// 1.5 × Options.Timeout (75 ms by default) for New, 9 × Options.Timeout
// (450 ms) for Close (a warm-up or reconnection in progress, bounded at 8
// × Timeout); the bound is generous for a loaded machine, and well under go-redis's
// 5 s read timeout, which the code before the fix waited (or for ever,
// with ReadTimeout -1).
const closeBound = 2 * time.Second

// within runs f and fails t if it has not returned after closeBound. It
// returns how long f took.
func within(t *testing.T, what string, f func() error) time.Duration {
	t.Helper()
	done := make(chan error, 1)
	t0 := time.Now()
	go func() { done <- f() }()
	select {
	case err := <-done:
		took := time.Since(t0)
		t.Logf("%s returned in %v", what, took.Round(time.Millisecond))
		require.NoError(t, err, what)
		return took
	case <-time.After(closeBound):
		t.Fatalf("%s still blocked after %v", what, closeBound)
		return 0
	}
}

// silentServer listens on loopback and accepts connections, reading and
// never answering, until t's cleanup closes it and them.
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				b := make([]byte, 512)
				for {
					if _, err := c.Read(b); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// TestCloseSilentServer makes a Limiter against a TCP server that accepts
// connections and never answers, with go-redis's read timeout off
// (ReadTimeout -1: with ContextTimeoutEnabled the context is the only
// bound): New and Close each return within a bound, Wait fails closed
// with ErrUnavailable, and no goroutine is left (goleak in TestMain).
// Before the fix New subscribed with context.Background() and hung in
// go-redis's HELLO, holding the PubSub's lock that Close waits for.
func TestCloseSilentServer(t *testing.T) {
	addr := silentServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, ReadTimeout: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	var lim *Limiter
	within(t, "New", func() (err error) {
		lim, err = New(rdb, pace.TokenBucket(pace.PerSecond(5), 1), Options{})
		return err
	})
	_, err := lim.Wait(context.Background(), "k", 0)
	assert.ErrorIs(t, err, ErrUnavailable)
	time.Sleep(300 * time.Millisecond) // listen is reconnecting meanwhile
	within(t, "Close", func() error { _ = lim.Close(); return nil })
}

// TestCloseSuspendedRedis stops redis-server with SIGSTOP (by PID): the
// kernel still accepts connections but nothing answers. A Limiter made
// before, and one made while it is stopped, both close within a bound.
func TestCloseSuspendedRedis(t *testing.T) {
	srv, rdb := startRedis(t)
	l := pace.TokenBucket(pace.PerSecond(5), 1)
	before, err := New(rdb, l, Options{Prefix: "close:"})
	require.NoError(t, err)
	_, err = before.Wait(context.Background(), "k", 0)
	require.NoError(t, err)
	time.Sleep(100 * time.Millisecond) // subscribed
	require.NoError(t, srv.Suspend())
	defer func() { require.NoError(t, srv.Resume()) }()
	_, err = before.Wait(context.Background(), "k", 0)
	assert.ErrorIs(t, err, ErrUnavailable)

	fresh := newClient(t, srv.Addr()) // its first connections dial the stopped server
	var during *Limiter
	within(t, "New while stopped", func() (err error) {
		during, err = New(fresh, l, Options{Prefix: "close:"})
		return err
	})
	time.Sleep(300 * time.Millisecond)
	within(t, "Close of the Limiter made before", func() error { _ = before.Close(); return nil })
	within(t, "Close of the Limiter made while stopped", func() error { _ = during.Close(); return nil })
}
