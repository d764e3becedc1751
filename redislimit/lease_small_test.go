package redislimit

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/throttle"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLeaseShareAtLeastOne: with more processes than units, the equal
// share rounds down to zero; a process that wants units still gets one
// while one is free, and the grants never add up to more than U.
func TestLeaseShareAtLeastOne(t *testing.T) {
	_, rdb := startRedis(t)
	const u = 5
	keys := []string{"small:{k}:s", "small:{k}:p", "small:{k}:l"}
	renew := func(id string, now int64) leaseReply {
		r, err := runLease(context.Background(), rdb, keys, id, leaseReq{want: -1}, u, shL, shLead, shSpan, now, shUp)
		require.NoError(t, err)
		return r
	}
	var got []int64
	for round := range 4 { // every lease runs from the first round on: the share is 5/6 of a unit
		got = got[:0]
		for i := range 6 {
			got = append(got, renew(fmt.Sprint("p", i), shT0+int64(round)*shL+int64(i)).grant)
		}
		if round == 0 {
			assert.Equal(t, []int64{u, 0, 0, 0, 0, 0}, got, "p0 alone at first")
		}
	}
	assert.Equal(t, []int64{1, 1, 1, 1, 1, 0}, got, "once p0's first claim ended: a unit each while one is free, none beyond U")
}

// TestLeaseUnitsSmallestPart: a share counts units of the part with the
// smallest Rate.N, so that one unit scales every part to at least one.
func TestLeaseUnitsSmallestPart(t *testing.T) {
	l := pace.All(pace.SlidingLog(pace.PerSecond(100)), pace.SlidingLog(pace.PerSecond(5)))
	parts, err := convert(l, 0)
	require.NoError(t, err)
	ls, err := newLeaser(l, parts, Options{Lease: time.Second}, DefaultTimeout, 0)
	require.NoError(t, err)
	assert.Equal(t, int64(5), ls.units)
	assert.Equal(t, time.Second, ls.per)
	s, ok := ls.share(1)
	require.True(t, ok, "one unit admits")
	ps := s.Parts()
	require.Len(t, ps, 2)
	_, r0, _, _ := ps[0].Params()
	_, r1, _, _ := ps[1].Params()
	assert.Equal(t, 20, r0.N, "a fifth of 100/s")
	assert.Equal(t, 1, r1.N, "a fifth of 5/s")
}

// TestLeaseFleetSmallLimit: more leased Limiters than a limit's Rate.N
// (6 on 5/s; 10 on All(100/s, 5/s)) use the limit, and together never
// admit more than it in any second.
func TestLeaseFleetSmallLimit(t *testing.T) {
	_, rdb := startRedis(t)
	for _, tc := range []struct {
		name string
		l    pace.Limit
		n    int
	}{
		{"six", pace.SlidingLog(pace.PerSecond(5)), 6},
		{"many", pace.SlidingLog(pace.PerSecond(5)), 25},
		{"all", pace.All(pace.SlidingLog(pace.PerSecond(100)), pace.SlidingLog(pace.PerSecond(5))), 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := "small-" + tc.name + ":"
			notFresh(t, rdb, prefix, "k")
			const run = 4 * time.Second
			scripts0 := commandStats(t, rdb)["evalsha"]
			ctx := waitCtx(t, run)
			var mu sync.Mutex
			var at []time.Time
			var wg sync.WaitGroup
			for range tc.n {
				lim := newLimiter(t, rdb, tc.l, Options{Prefix: prefix, Lease: time.Second})
				wg.Add(1)
				go func() {
					defer wg.Done()
					for ctx.Err() == nil {
						p, err := lim.Wait(ctx, "k", 0)
						if err != nil {
							continue
						}
						mu.Lock()
						at = append(at, time.Now())
						mu.Unlock()
						lim.Settle(p, throttle.Outcome{Sent: true, Response: true})
					}
				}()
			}
			wg.Wait()
			scripts := commandStats(t, rdb)["evalsha"] - scripts0
			sort.Slice(at, func(i, j int) bool { return at[i].Before(at[j]) })
			worst := 0
			for i := range at {
				j := sort.Search(len(at), func(j int) bool { return !at[j].Before(at[i].Add(time.Second)) })
				worst = max(worst, j-i)
			}
			t.Logf("%d Limiters on %v: %d admitted in %v (the limit allows 5/s), at most %d in a second; %d scripts", tc.n, tc.l, len(at), run, worst, scripts)
			assert.LessOrEqual(t, scripts, int64(tc.n*(int(run/time.Second)+2)), "a renewal a lease, and Close")
			assert.LessOrEqual(t, worst, 5, "never over the limit")
			assert.GreaterOrEqual(t, len(at), 12, "the limit is used")
		})
	}
}

// notFresh marks the shares of key under prefix as written by a Redis up
// longer than a claim lives (see lease.lua), so that a test need not wait
// out the uptime of a redis-server it just started.
func notFresh(t *testing.T, rdb *redis.Client, prefix, key string) {
	t.Helper()
	require.NoError(t, rdb.HSet(context.Background(), prefix+"{"+keyTag(key)+"}:s", "!ok", "1").Err())
}
