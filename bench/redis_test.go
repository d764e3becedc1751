package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/realserver"
	"github.com/pacehttp/pace/redislimit"
	"github.com/pacehttp/pace/throttle"
	"github.com/redis/go-redis/v9"
)

// Decisions against one local redis-server (started by the benchmark, no
// persistence): pace's redislimit.Limiter.Wait next to go-redis/redis_rate's
// Allow, with 1 and 8 goroutines on one key. Both limits are a token
// bucket far above what any run reaches (10⁶ a second, burst 10⁶), so every
// decision is one script that admits at once: what is timed is the round
// trip and the script. rtt/op counts the calls Redis received (EVALSHA and
// EVAL, from INFO commandstats) per decision, redis-µs/op the time Redis
// spent in them per call (commandstats' usec), client-µs/op the CPU time
// (user and system) of this process per decision: the two sides of a
// decision's cost, which the machine's other load disturbs less than
// decisions/s.
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
			lim.Settle(p, throttle.Outcome{Sent: true, Response: true}) // no round trip: see Limiter.Settle
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
				before, cpu0 := scriptCalls(b, rdb), processCPU()
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
				cpu := processCPU() - cpu0
				after := scriptCalls(b, rdb)
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "client-µs/op")
				b.ReportMetric(float64(after.calls-before.calls)/float64(b.N), "rtt/op")
				b.ReportMetric(float64(after.usec-before.usec)/float64(after.calls-before.calls), "redis-µs/op")
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
			})
		}
	}
}

// scripts is what Redis's INFO commandstats counts of EVALSHA and EVAL.
type scripts struct{ calls, usec int64 }

// scriptCalls returns the EVALSHA and EVAL calls Redis has received and the
// microseconds it spent in them, from its own INFO commandstats (commands
// that scripts run are counted under their own names).
func scriptCalls(b *testing.B, rdb *redis.Client) scripts {
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var n scripts
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		for _, cmd := range []string{"cmdstat_evalsha:calls=", "cmdstat_eval:calls="} {
			if rest, ok := strings.CutPrefix(line, cmd); ok {
				var calls, usec int64
				if _, err := fmt.Sscanf(rest, "%d,usec=%d,", &calls, &usec); err != nil {
					b.Fatal(err)
				}
				n.calls += calls
				n.usec += usec
			}
		}
	}
	return n
}

// cannedScripts is a go-redis hook that answers every EVALSHA itself, with
// reply, without sending anything to Redis.
type cannedScripts struct{ reply func() any }

func (cannedScripts) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h cannedScripts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if c, ok := cmd.(*redis.Cmd); ok && cmd.Name() == "evalsha" {
			c.SetVal(h.reply())
			return nil
		}
		return next(ctx, cmd)
	}
}

func (cannedScripts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// The client's own cost of a decision: the same contestants as
// BenchmarkRedisDecision, serially, with every script answered by a go-redis
// hook (cannedScripts) with the reply an admitting decision gets, so that no
// network, no Redis and no other process is timed. It measures what each
// library does around the round trip: building the command, its context,
// reading the reply, its own bookkeeping. go-redis's encoding of the command
// and decoding of the reply, which happen on the connection, are not in it.
func BenchmarkRedisClientSide(b *testing.B) {
	ctx := context.Background()
	now := time.Now().UnixMicro()
	paceReply := func() any { // see decideScript: booked at once, no strikes, no probe
		return []any{int64(0), now, int64(0)}
	}
	rrReply := func() any { // see redis_rate's allowN: allowed, remaining, retry_after, reset_after
		return []any{int64(1), int64(999_999), "-1", "0.000001"}
	}
	newClient := func(reply func() any) *redis.Client {
		rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
		rdb.AddHook(cannedScripts{reply})
		b.Cleanup(func() { _ = rdb.Close() })
		return rdb
	}

	b.Run("pace", func(b *testing.B) {
		lim, err := redislimit.New(newClient(paceReply), pace.TokenBucket(pace.PerSecond(redisRate), redisBurst), redislimit.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer lim.Close()
		for b.Loop() {
			p, err := lim.Wait(ctx, "bench", 0)
			if err != nil {
				b.Fatal(err)
			}
			lim.Settle(p, throttle.Outcome{Sent: true, Response: true})
		}
	})
	b.Run("redis_rate", func(b *testing.B) {
		rr := redis_rate.NewLimiter(newClient(rrReply))
		limit := redis_rate.Limit{Rate: redisRate, Burst: redisBurst, Period: 1e9}
		for b.Loop() {
			if _, err := rr.Allow(ctx, "bench", limit); err != nil {
				b.Fatal(err)
			}
		}
	})
}
