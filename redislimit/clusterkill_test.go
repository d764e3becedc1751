package redislimit

import (
	"context"
	"errors"
	"fmt"
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

// The schedule of TestClusterMasterKilled, from the start of its run.
const (
	killAt      = 1 * time.Second
	restartAt   = 8 * time.Second
	killRunEnd  = 12 * time.Second
	nodeTimeout = 1000 // ms: cluster-node-timeout
)

// outcome is how one Wait ended.
type outcome int

const (
	byRedis    outcome = iota // Redis decided
	byFallback                // the Fallback decided
	refused                   // ErrUnavailable
)

// sample is one Wait of TestClusterMasterKilled.
type sample struct {
	at  time.Duration // since the run's start, when the Wait returned
	out outcome
}

// TestClusterMasterKilled kills one of the three masters of a Redis
// Cluster without replicas (SIGKILL by PID) while keys on every master
// decide, and starts it again later; once with
// cluster-require-full-coverage yes (Redis's default), once with no
// (redis.io, "Scale with Redis Cluster": cluster-require-full-coverage).
// With yes, the surviving masters refuse every key once they mark the
// dead one failed (CLUSTERDOWN), until it is back: their keys go to the
// failure policy too. With no, the surviving masters' keys decide
// throughout; only the dead master's keys follow the policy, fail closed
// (ErrUnavailable) or fail open (the Fallback).
func TestClusterMasterKilled(t *testing.T) {
	for _, full := range []string{"yes", "no"} {
		t.Run("full coverage "+full, func(t *testing.T) {
			r := runMasterKilled(t, full)
			closed, open := r["closed"], r["open"]
			t.Logf("cluster-require-full-coverage %s, cluster-node-timeout %d ms, killed at %v, restarted at %v:", full, nodeTimeout, killAt, restartAt)
			for _, name := range []string{"closed", "open"} {
				for _, class := range []string{"surviving", "dead"} {
					t.Logf("  %s, %s master's keys: %s", name, class, r[name][class].summary())
				}
			}
			for _, name := range []string{"closed", "open"} {
				for _, class := range []string{"surviving", "dead"} {
					s := r[name][class]
					assert.Zero(t, s.count(0, killAt, notRedis), "%s %s: before the kill, Redis decides", name, class)
					assert.NotZero(t, s.count(killRunEnd-time.Second, killRunEnd, byRedis), "%s %s: back on Redis after the restart", name, class)
				}
			}
			// The dead master's keys follow the policy from the kill to
			// the restart, whatever the coverage setting.
			dead := killAt + 200*time.Millisecond
			assert.Zero(t, closed["dead"].count(dead, restartAt, byRedis), "no decision from a dead master")
			assert.NotZero(t, closed["dead"].count(dead, restartAt, refused), "fail closed")
			assert.Zero(t, open["dead"].count(dead, restartAt, refused), "fail open")
			assert.NotZero(t, open["dead"].count(dead, restartAt, byFallback), "fail open")
			if full == "no" {
				for _, name := range []string{"closed", "open"} {
					s := r[name]["surviving"]
					assert.Zero(t, s.count(killAt, restartAt, notRedis), "%s: the surviving masters' keys keep deciding", name)
				}
				return
			}
			// Full coverage: the surviving masters refuse once they mark
			// the dead one failed, after about the node timeout, and
			// until it is back.
			first, ok := closed["surviving"].first(killAt, refused)
			require.True(t, ok, "with full coverage the surviving masters refuse too")
			assert.Less(t, first-killAt, 5*nodeTimeout*time.Millisecond, "refused within a few node timeouts")
			down := first + 500*time.Millisecond
			assert.Zero(t, closed["surviving"].count(down, restartAt, byRedis), "down until the dead master is back")
			assert.Zero(t, open["surviving"].count(down, restartAt, byRedis), "down until the dead master is back")
			assert.NotZero(t, open["surviving"].count(down, restartAt, byFallback), "fail open")
		})
	}
}

// notRedis stands for every outcome but byRedis in samples.count.
const notRedis outcome = -1

// samples are the Waits of one class of keys on one limiter, in order.
type samples []sample

// count returns how many samples in [from, to) ended with out (notRedis:
// any but byRedis).
func (ss samples) count(from, to time.Duration, out outcome) int {
	n := 0
	for _, s := range ss {
		if s.at >= from && s.at < to && (s.out == out || out == notRedis && s.out != byRedis) {
			n++
		}
	}
	return n
}

// first returns the time of the first sample at or after from that ended
// with out.
func (ss samples) first(from time.Duration, out outcome) (time.Duration, bool) {
	for _, s := range ss {
		if s.at >= from && s.out == out {
			return s.at, true
		}
	}
	return 0, false
}

// summary tells the spans of the samples' outcomes after the kill, as
// "redis 0s-1.9s, refused 1.9s-8.1s, redis 8.1s-12s".
func (ss samples) summary() string {
	names := map[outcome]string{byRedis: "redis", byFallback: "fallback", refused: "refused"}
	out, from, last, s := outcome(-2), time.Duration(0), time.Duration(0), ""
	for _, x := range ss {
		if x.out != out {
			if out != -2 {
				s += fmt.Sprintf("%s %v-%v, ", names[out], from.Round(10*time.Millisecond), last.Round(10*time.Millisecond))
			}
			out, from = x.out, x.at
		}
		last = x.at
	}
	return s + fmt.Sprintf("%s %v-%v", names[out], from.Round(10*time.Millisecond), last.Round(10*time.Millisecond))
}

// runMasterKilled runs the schedule on a 3-master cluster with
// cluster-require-full-coverage full, with two limiters (fail closed and
// fail open) on one key per master, and returns their samples by limiter
// ("closed", "open") and class of key ("surviving", "dead").
func runMasterKilled(t *testing.T, full string) map[string]map[string]samples {
	c := realserver.StartRedisCluster(t, 3,
		"--cluster-node-timeout", fmt.Sprint(nodeTimeout), "--cluster-require-full-coverage", full)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = cc.Close() })
	ctx := waitCtx(t, 60*time.Second)
	require.NoError(t, cc.ForEachMaster(ctx, func(context.Context, *redis.Client) error { return nil }))
	victim := c.Addrs()[0]
	// One key per master: its slot is its tag's.
	keyOf := map[string]string{}
	for i := 0; len(keyOf) < 3 && i < 1000; i++ {
		k := fmt.Sprintf("k%d.example", i)
		m, err := cc.MasterForKey(ctx, "{"+k+"}")
		require.NoError(t, err)
		if _, ok := keyOf[m.Options().Addr]; !ok {
			keyOf[m.Options().Addr] = k
		}
	}
	require.Len(t, keyOf, 3, "a key on each master")

	// The policy is under test, not the latency: a Timeout of 200 ms
	// leaves room for a loaded machine.
	l := pace.TokenBucket(pace.PerSecond(10_000), 10_000)
	lims := map[string]*Limiter{
		"closed": newLimiter(t, cc, l, Options{Prefix: "closed:", Timeout: 200 * time.Millisecond}),
		"open":   newLimiter(t, cc, l, Options{Prefix: "open:", Timeout: 200 * time.Millisecond, Fallback: l}),
	}
	for _, lim := range lims { // load the script on every master
		for _, k := range keyOf {
			_, err := lim.Wait(ctx, k, 0)
			require.NoError(t, err)
		}
	}

	var (
		mu    sync.Mutex
		res   = map[string]map[string]samples{"closed": {}, "open": {}}
		other []error
		wg    sync.WaitGroup
	)
	start := time.Now()
	for name, lim := range lims {
		for addr, key := range keyOf {
			class := "surviving"
			if addr == victim {
				class = "dead"
			}
			wg.Go(func() {
				for time.Since(start) < killRunEnd {
					p, err := lim.Wait(ctx, key, 0)
					out := byRedis
					switch {
					case err == nil && p.Gen&fallbackBit != 0:
						out = byFallback
					case err == nil:
					case errors.Is(err, ErrUnavailable):
						out = refused
					default:
						mu.Lock()
						other = append(other, err)
						mu.Unlock()
						return
					}
					if err == nil {
						lim.Settle(p, throttle.Outcome{Sent: true, Response: true})
					}
					mu.Lock()
					res[name][class] = append(res[name][class], sample{at: time.Since(start), out: out})
					mu.Unlock()
					time.Sleep(10 * time.Millisecond)
				}
			})
		}
	}
	time.Sleep(killAt - time.Since(start))
	require.NoError(t, c.Kill(0))
	time.Sleep(restartAt - time.Since(start))
	require.NoError(t, c.Restart(0))
	wg.Wait()
	require.Empty(t, other)
	return res
}
