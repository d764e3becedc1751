package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/realserver"
	"github.com/pacehttp/pace/redislimit"
	"github.com/pacehttp/pace/throttle"
	"github.com/redis/go-redis/v9"
)

// leaseBench is the lease of BenchmarkRedisLeased.
const leaseBench = time.Second

// Decisions on one local redis-server, in one run: redis_rate's Allow,
// pace's redislimit in its per-decision mode, and in its lease mode
// (Options.Lease: the process holds a share of the key's limit and
// decides in memory, renewing it once a lease), with 1 and 8 goroutines on
// one key. redis_rate and the per-decision mode hold a token bucket of
// 10⁶ a second (burst 10⁶), far above what they reach. The lease mode
// decides faster than a limit held in Redis may be (one a microsecond at
// most): it holds a fixed window of 10⁹ a second, so that it never waits
// either. Besides decisions/s: p50-ns and p99-ns, a decision's latency
// (two clock readings around each, in the same loop), and for the lease
// mode cmds/lease, the scripts its redis-server (one of its own) ran (INFO
// commandstats: EVALSHA and EVAL) per lease of the benchmark so far, from
// the end of the warm-up, with its one process and one key (kept in use
// while the others run, ten decisions a second).
func BenchmarkRedisLeased(b *testing.B) {
	srv := realserver.StartRedis(b)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true, PoolSize: 16})
	defer rdb.Close()
	ctx := context.Background()

	perDecision, err := redislimit.New(rdb, pace.TokenBucket(pace.PerSecond(redisRate), redisBurst), redislimit.Options{Prefix: "perdecision:"})
	if err != nil {
		b.Fatal(err)
	}
	defer perDecision.Close()
	srv2 := realserver.StartRedis(b) // the lease mode's own, so that its commandstats count its renewals alone
	rdb2 := redis.NewClient(&redis.Options{Addr: srv2.Addr(), ContextTimeoutEnabled: true, PoolSize: 16})
	defer rdb2.Close()
	leased, err := redislimit.New(rdb2, pace.FixedWindow(pace.PerSecond(1_000_000_000)), redislimit.Options{Prefix: "leased:", Lease: leaseBench})
	if err != nil {
		b.Fatal(err)
	}
	defer leased.Close()
	paceDecide := func(lim *redislimit.Limiter) func() error {
		return func() error {
			p, err := lim.Wait(ctx, "bench", 0)
			if err == nil {
				lim.Settle(p, throttle.Outcome{Sent: true, Response: true})
			}
			return err
		}
	}
	rr := redis_rate.NewLimiter(rdb)
	rrLimit := redis_rate.Limit{Rate: redisRate, Burst: redisBurst, Period: 1e9}
	rrDecide := func() error {
		res, err := rr.Allow(ctx, "bench", rrLimit)
		if err == nil && res.Allowed == 0 {
			err = fmt.Errorf("redis_rate refused: %+v", res)
		}
		return err
	}
	contestants := []struct {
		name   string
		decide func() error
	}{{"redis_rate", rrDecide}, {"pace", paceDecide(perDecision)}, {"pace-leased", paceDecide(leased)}}
	// Warm up: load the scripts, open the connections, and wait for the
	// first share (a redis-server up for less than a claim's life, about
	// 3 s here, renews only shares still held).
	for _, c := range contestants {
		for range 500 {
			if err := c.decide(); err != nil {
				b.Fatal(err)
			}
		}
	}
	// The lease mode's key stays in use while the others run, as in a
	// process that keeps calling: its share is renewed, never lapses.
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				_ = paceDecide(leased)()
			}
		}
	}()
	defer func() { close(stop); <-stopped }()
	start, before := time.Now(), scriptCalls(b, rdb2)
	for _, goroutines := range []int{1, 8} {
		for _, c := range contestants {
			b.Run(fmt.Sprintf("goroutines=%d/%s", goroutines, c.name), func(b *testing.B) {
				lat := timeDecisions(b, goroutines, c.decide)
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
				b.ReportMetric(float64(lat.quantile(0.5)), "p50-ns")
				b.ReportMetric(float64(lat.quantile(0.99)), "p99-ns")
				if c.name == "pace-leased" {
					calls := scriptCalls(b, rdb2).calls - before.calls
					b.ReportMetric(float64(calls)/(float64(time.Since(start))/float64(leaseBench)), "cmds/lease")
				}
			})
		}
	}
}

// hist counts latencies: by the nanosecond below 10 µs, by the
// microsecond below 10 ms, then one bucket.
type hist [2 * 10_000]int64

func (h *hist) add(ns int64) {
	switch {
	case ns < 10_000:
		h[ns]++
	case ns < 10_000_000:
		h[10_000+ns/1000-10]++
	default:
		h[len(h)-1]++
	}
}

// quantile returns the latency (ns) below which q of those counted lie.
func (h *hist) quantile(q float64) int64 {
	var n int64
	for _, c := range h {
		n += c
	}
	want, seen := int64(q*float64(n)), int64(0)
	for i, c := range h {
		if seen += c; seen > want {
			if i < 10_000 {
				return int64(i)
			}
			return int64(i-10_000+10) * 1000
		}
	}
	return -1
}

// timeDecisions runs decide b.N times on goroutines goroutines and returns
// the latencies of the decisions.
func timeDecisions(b *testing.B, goroutines int, decide func() error) *hist {
	var mu sync.Mutex
	all := new(hist)
	run := func(n int) {
		h := new(hist)
		for range n {
			t0 := time.Now()
			if err := decide(); err != nil {
				b.Error(err)
				return
			}
			h.add(int64(time.Since(t0)))
		}
		mu.Lock()
		for i, c := range h {
			all[i] += c
		}
		mu.Unlock()
	}
	b.ResetTimer()
	if goroutines == 1 {
		run(b.N)
	} else {
		var wg sync.WaitGroup
		for i := range goroutines {
			n := b.N / goroutines
			if i < b.N%goroutines {
				n++
			}
			wg.Go(func() { run(n) })
		}
		wg.Wait()
	}
	b.StopTimer()
	return all
}
