package redislimit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/realserver"
	"github.com/pacehttp/pace/throttle"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Four independent clients share keys at 50/s burst 50 for 5 s.
const (
	sharedClients = 4
	sharedRate    = 50
	sharedBurst   = 50
	sharedRun     = 5 * time.Second
	// lateness is how late, at most, a Wait returns after its slot on a
	// loaded test machine: a window of the client's instants then holds the
	// slots of a window this much longer.
	lateness = 20 * time.Millisecond
)

// TestSharedLimitSingleNode: the admitted total stays within burst +
// rate·run, and no 1 s window within burst + rate·1 s.
func TestSharedLimitSingleNode(t *testing.T) {
	srv := realserver.StartRedis(t)
	clients := make([]redis.UniversalClient, sharedClients)
	for i := range clients {
		clients[i] = newClient(t, srv.Addr())
	}
	runShared(t, clients, []string{"api.example"})
}

// TestSharedLimitCluster is the same on a 3-master Redis Cluster, with
// keys spread over its slots (and masters).
func TestSharedLimitCluster(t *testing.T) {
	c := realserver.StartRedisCluster(t, 3)
	clients := make([]redis.UniversalClient, sharedClients)
	for i := range clients {
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = cc.Close() })
		clients[i] = cc
	}
	keys := []string{"a.example", "b.example", "c.example", "d.example", "e.example", "f.example"}
	masters := map[string]bool{}
	cc := clients[0].(*redis.ClusterClient)
	ctx := waitCtx(t, 10*time.Second)
	require.NoError(t, cc.ForEachMaster(ctx, func(context.Context, *redis.Client) error { return nil }))
	for _, k := range keys {
		m, err := cc.MasterForKey(ctx, DefaultPrefix+"{"+k+"}:p")
		require.NoError(t, err)
		masters[m.Options().Addr] = true
	}
	require.GreaterOrEqual(t, len(masters), 2, "the keys should land on several masters")
	t.Logf("%d keys on %d masters", len(keys), len(masters))
	runShared(t, clients, keys)
}

// runShared runs 3 goroutines per client per key, each calling Wait until
// the run's deadline, and checks every key's admitted instants.
func runShared(t *testing.T, clients []redis.UniversalClient, keys []string) {
	l := pace.TokenBucket(pace.PerSecond(sharedRate), sharedBurst)
	lims := make([]*Limiter, len(clients))
	for i, rdb := range clients {
		// The limit is under test here, not the timeout (TestRedisKilled
		// checks that): with 72 goroutines starting at once under -race on
		// a loaded 2-core machine, a decision's round trip can exceed the
		// 50 ms default, and fail closed.
		lims[i] = newLimiter(t, rdb, l, Options{Timeout: time.Second})
		// Load the script on every master holding a key and open the
		// connections the run uses (as many as its goroutines), under
		// another prefix (same slots, other keys), before the clock
		// starts: a cold client dialling 18 connections at once under
		// -race takes longer than the 50 ms timeout.
		warm := newLimiter(t, rdb, pace.TokenBucket(pace.PerSecond(1e5), 1e5), Options{Prefix: "warm:", Timeout: 5 * time.Second})
		var wg sync.WaitGroup
		for _, key := range keys {
			for range 3 {
				wg.Go(func() {
					_, err := warm.Wait(context.Background(), key, 0)
					assert.NoError(t, err)
				})
			}
		}
		wg.Wait()
	}
	start := time.Now()
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(sharedRun))
	defer cancel()
	var mu sync.Mutex
	admitted := map[string][]time.Time{}
	var failures []error
	var wg sync.WaitGroup
	for _, lim := range lims {
		for _, key := range keys {
			for range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						p, err := lim.Wait(ctx, key, 0)
						if err != nil {
							if !errors.Is(err, pace.ErrWaitExceedsDeadline) && !errors.Is(err, context.DeadlineExceeded) {
								mu.Lock()
								failures = append(failures, fmt.Errorf("at %v: %w", time.Since(start).Round(time.Millisecond), err))
								mu.Unlock()
							}
							return
						}
						at := time.Now()
						lim.Settle(p, throttle.Outcome{Sent: true, Response: true})
						mu.Lock()
						admitted[key] = append(admitted[key], at)
						mu.Unlock()
					}
				}()
			}
		}
	}
	wg.Wait()
	require.Empty(t, failures)
	maxTotal := sharedBurst + sharedRate*int(sharedRun/time.Second)
	promise := sharedBurst + sharedRate // in any 1 s
	for _, key := range keys {
		ts := admitted[key]
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		peak := peakWindow(ts, time.Second-lateness)
		t.Logf("%s: %d admitted in %v (at most %d), busiest 1 s window %d (promise %d)", key, len(ts), sharedRun, maxTotal, peak, promise)
		assert.LessOrEqual(t, len(ts), maxTotal, key)
		assert.GreaterOrEqual(t, len(ts), maxTotal*9/10, "%s: the limit should be nearly used", key)
		assert.LessOrEqual(t, peak, promise, "%s: busiest window", key)
	}
}

// peakWindow returns the most instants of sorted ts in any closed window
// of length w.
func peakWindow(ts []time.Time, w time.Duration) int {
	peak, j := 0, 0
	for i := range ts {
		for ts[i].Sub(ts[j]) > w {
			j++
		}
		peak = max(peak, i-j+1)
	}
	return peak
}

var _ = fmt.Sprint
