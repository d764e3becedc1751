package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/go-redis/redis_rate/v10"
	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/realserver"
	"github.com/pacehttp/pace/redislimit"
	"github.com/redis/go-redis/v9"
)

// Decisions against one local redis-server (started by the benchmark, no
// persistence): pace's redislimit.Limiter.Wait next to go-redis/redis_rate's
// Allow, with 1 and 8 goroutines on one key. Both limits are a token
// bucket far above what any run reaches (10⁶ a second, burst 10⁶), so every
// decision is one script that admits at once: what is timed is the round
// trip and the script. rtt/op counts the calls Redis received (EVALSHA and
// EVAL, from INFO commandstats) per decision.
const (
	redisRate  = 1_000_000
	redisBurst = 1_000_000
)

func BenchmarkRedisDecision(b *testing.B) {
	srv := realserver.StartRedis(b)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true, PoolSize: 16})
	defer rdb.Close()
	ctx := context.Background()

	lim, err := redislimit.New(rdb, pace.TokenBucket(pace.PerSecond(redisRate), redisBurst), redislimit.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer lim.Close()
	paceDecide := func() error {
		p, err := lim.Wait(ctx, "bench", 0)
		if err == nil {
			lim.Settle(p, pace.Outcome{Sent: true, Response: true}) // no round trip: see Limiter.Settle
		}
		return err
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
	}{{"pace", paceDecide}, {"redis_rate", rrDecide}}
	for _, c := range contestants {
		for range 500 { // load the script, open the connections
			if err := c.decide(); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, goroutines := range []int{1, 8} {
		for _, c := range contestants { // side by side, at each number of goroutines
			b.Run(fmt.Sprintf("goroutines=%d/%s", goroutines, c.name), func(b *testing.B) {
				before := scriptCalls(b, rdb)
				if goroutines == 1 {
					for b.Loop() {
						if err := c.decide(); err != nil {
							b.Fatal(err)
						}
					}
				} else {
					b.SetParallelism((goroutines + 1) / 2) // 2 cores: 8 goroutines
					b.ResetTimer()
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							if err := c.decide(); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				b.StopTimer()
				b.ReportMetric(float64(scriptCalls(b, rdb)-before)/float64(b.N), "rtt/op")
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
			})
		}
	}
}

// scriptCalls returns the EVALSHA and EVAL calls Redis has received, from
// its own INFO commandstats (commands that scripts run are counted under
// their own names).
func scriptCalls(b *testing.B, rdb *redis.Client) int64 {
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		for _, cmd := range []string{"cmdstat_evalsha:calls=", "cmdstat_eval:calls="} {
			if rest, ok := strings.CutPrefix(line, cmd); ok {
				var calls int64
				if _, err := fmt.Sscanf(rest, "%d", &calls); err != nil {
					b.Fatal(err)
				}
				n += calls
			}
		}
	}
	return n
}
