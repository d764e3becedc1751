package faulttest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/realserver"
	"github.com/pacehttp/pace/redislimit"
	"github.com/pacehttp/pace/throttle"
)

// latencyEachWay returns toxiproxy's latency toxics adding d to each
// direction of every connection.
func latencyEachWay(d time.Duration) []string {
	ms := d.Milliseconds()
	return []string{
		fmt.Sprintf(`{"name":"up","type":"latency","stream":"upstream","attributes":{"latency":%d}}`, ms),
		fmt.Sprintf(`{"name":"down","type":"latency","stream":"downstream","attributes":{"latency":%d}}`, ms),
	}
}

// TestRedisFarAway: a new client of a Redis 20 ms away (and 40 ms) each
// way, behind toxiproxy, decides from its first Wait on, with a Timeout
// that holds one round trip with room (1.5 × it). The
// connection's handshake (dial, HELLO, CLIENT SETINFO) and the scripts'
// load ran inside the decision's Timeout before, which threw the
// half-made connection away: 10 of 10 Waits refused, 10 connections
// made, none reused (pacehttp/pace#19). Now none is refused, the first
// included, and the connections are reused (go-redis's PoolStats, and
// Redis's own count of its clients).
func TestRedisFarAway(t *testing.T) {
	srv := realserver.StartRedis(t)
	direct := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	defer direct.Close()
	for _, tc := range []struct {
		each, timeout time.Duration
	}{
		// 40 ms a round trip. The default 50 ms left 10 ms for -race and
		// a loaded 2-core CI machine, and two late replies in a row there
		// took the link down (4 of 30 refused); the old code refused
		// every decision at either Timeout (a handshake and a script's
		// load are 4-5 round trips).
		{20 * time.Millisecond, 60 * time.Millisecond},
		{40 * time.Millisecond, 120 * time.Millisecond}, // 80 ms a round trip
	} {
		t.Run(tc.each.String(), func(t *testing.T) {
			proxy := startProxy(t, srv.Addr(), latencyEachWay(tc.each)...)
			defer proxy.Stop()
			rdb := redis.NewClient(&redis.Options{Addr: proxy.Listen, ContextTimeoutEnabled: true})
			defer rdb.Close()
			lim, err := redislimit.New(rdb, pace.TokenBucket(pace.PerSecond(1000), 1000),
				redislimit.Options{Prefix: "far" + tc.each.String() + ":", Timeout: tc.timeout})
			require.NoError(t, err)
			defer lim.Close()

			var (
				mu      sync.Mutex
				refused []int // the decisions refused, by number
				n       int
			)
			wait := func() {
				p, err := lim.Wait(context.Background(), "k", 0)
				mu.Lock()
				n++
				if err != nil {
					refused = append(refused, n)
					t.Logf("decision %d: %v", n, err)
				}
				mu.Unlock()
				if err == nil {
					lim.Settle(p, throttle.Outcome{Sent: true, Response: true})
				}
			}
			for range 10 { // one after the other, as in pacehttp/pace#19
				wait()
			}
			var wg sync.WaitGroup
			for range 4 { // then 4 at once
				wg.Go(func() {
					for range 5 {
						wait()
					}
				})
			}
			wg.Wait()
			st := rdb.PoolStats()
			info, err := direct.Info(context.Background(), "clients").Result()
			require.NoError(t, err)
			t.Logf("%v each way: %d decisions, refused %v; pool: %d connections made (misses), %d reused (hits), %d open; redis: %s",
				tc.each, n, refused, st.Misses, st.Hits, st.TotalConns, clientsLine(info))
			assert.Empty(t, refused, "decisions refused")
			assert.LessOrEqual(t, st.Misses, uint32(8), "connections made: the warm-up's and at most one a goroutine")
			assert.GreaterOrEqual(t, st.Hits, uint32(n-8), "connections reused")
		})
	}
}

// clientsLine returns the connected_clients line of INFO clients.
func clientsLine(info string) string {
	for _, line := range strings.Split(info, "\n") {
		if strings.HasPrefix(line, "connected_clients:") {
			return strings.TrimSpace(line)
		}
	}
	return "connected_clients: ?"
}
