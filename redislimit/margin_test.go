package redislimit

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/throttle"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace/internal/quickest"
)

// spacing books one request of key through lim and returns the interval
// (µs) its pacer part counted for it: the part's TAT minus the booked
// instant, both on Redis's clock. It settles the request as answered.
func spacing(t *testing.T, ctx context.Context, rdb *redis.Client, lim *Limiter, prefix, key string) int64 {
	t.Helper()
	p, err := lim.Wait(ctx, key, 5*time.Second)
	require.NoError(t, err)
	at := p.State.(*inflight).at
	f := strings.Fields(rdb.Get(ctx, prefix+"{"+key+"}:0").Val())
	require.NotEmpty(t, f)
	tat, err := strconv.ParseInt(f[0], 10, 64)
	require.NoError(t, err)
	lim.Settle(p, throttle.Outcome{Sent: true, Response: true})
	return tat - at
}

// learned returns the learned record's margin and whether it holds a cut.
func learned(t *testing.T, ctx context.Context, rdb *redis.Client, prefix, key string) (margin int64, cut bool) {
	t.Helper()
	f := strings.Fields(rdb.Get(ctx, prefix+"{"+key+"}:l").Val())
	if len(f) == 0 {
		return 0, false
	}
	require.Len(t, f, 10)
	m, err := strconv.ParseInt(f[8], 10, 64)
	require.NoError(t, err)
	return m, f[5] != "0"
}

// TestMarginLearnedShared: the key's departure margin learns in Redis, as
// package pace's Keyed learns it in one process, and every Limiter of the
// prefix spaces by it. A first throttle of a request held to its slot
// (Track, no Strikes, no quota, the key's generation) doubles the margin
// instead of cutting the rate; any other throttle, or one at the widest
// margin, cuts as before. Limiter a settles, b (another process) books.
func TestMarginLearnedShared(t *testing.T) {
	_, rdb := startRedis(t)
	rdb2 := newClient(t, rdb.Options().Addr)
	ctx := waitCtx(t, 30*time.Second)
	pacer := pace.LeakyBucket(pace.PerSecond(10), pace.LeakyOptions{}) // 100 ms; the widest margin 5 ms
	throttled := throttle.Outcome{Sent: true, Response: true, Pause: time.Microsecond, Cut: true}
	for _, tt := range []struct {
		name   string
		start  time.Duration // Options.Margin
		permit func(*throttle.Permit)
		o      throttle.Outcome
		margin int64 // µs after the throttle, as b spaces
		cut    bool
	}{
		{"held to its slot: widens, no cut", time.Millisecond, nil, throttled, 2000, false},
		{"widens without Cut too (a Retry-After)", time.Millisecond, nil, throttle.Outcome{Sent: true, Response: true, Pause: time.Microsecond}, 2000, false},
		{"a strike already: cut", time.Millisecond, func(p *throttle.Permit) { p.Strikes = 1 }, throttled, 1000, true},
		{"not tracked: cut", time.Millisecond, func(p *throttle.Permit) { p.Track = false }, throttled, 1000, true},
		{"another generation: no new strike", time.Millisecond, func(p *throttle.Permit) { p.Gen++ }, throttled, 1000, false},
		{"a quota stated: cut", time.Millisecond, nil,
			throttle.Outcome{Sent: true, Response: true, Pause: time.Microsecond, Cut: true, Quota: throttle.Quota{Remaining: 1000, Reset: 10 * time.Second}}, 1000, true},
		{"at the widest already: cut", 5 * time.Millisecond, nil, throttled, 5000, true},
		{"none to start: widens to 1.5 ms", -1, nil, throttled, 1500, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			prefix := "m" + strconv.Itoa(int(time.Now().UnixNano()%1e9)) + ":"
			a := newLimiter(t, rdb, pacer, Options{Prefix: prefix, Margin: tt.start})
			b := newLimiter(t, rdb2, pacer, Options{Prefix: prefix, Margin: tt.start})
			start := int64(max(tt.start, 0) / time.Microsecond)
			assert.Equal(t, 100000+start, spacing(t, ctx, rdb, b, prefix, "k"), "the starting margin")
			p, err := a.Wait(ctx, "k", time.Second)
			require.NoError(t, err)
			require.True(t, p.Track)
			if tt.permit != nil {
				tt.permit(&p)
			}
			a.Settle(p, tt.o)
			_, cut := learned(t, ctx, rdb, prefix, "k")
			assert.Equal(t, tt.cut, cut, "the rate cut")
			assert.Equal(t, 100000+tt.margin, spacing(t, ctx, rdb, b, prefix, "k"), "the other process's spacing")
		})
	}

	t.Run("doubles to the widest, then cuts", func(t *testing.T) {
		a := newLimiter(t, rdb, pacer, Options{Prefix: "mw:", Margin: time.Millisecond})
		b := newLimiter(t, rdb2, pacer, Options{Prefix: "mw:", Margin: time.Millisecond})
		for i, want := range []int64{2000, 4000, 5000, 5000} {
			p, err := a.Wait(ctx, "k", time.Second)
			require.NoError(t, err)
			require.Zero(t, p.Strikes, "the probe's answer reset them")
			a.Settle(p, throttled)
			m, cut := learned(t, ctx, rdb, "mw:", "k")
			assert.Equal(t, want, m)
			assert.Equal(t, i == 3, cut, "cut only once at the widest")
			assert.Equal(t, 100000+want, spacing(t, ctx, rdb, b, "mw:", "k")) // the probe, answered
		}
	})

	t.Run("halves after 128 intervals without a throttle", func(t *testing.T) {
		fast := pace.LeakyBucket(pace.PerSecond(1000), pace.LeakyOptions{}) // 1 ms; the widest margin 50 µs; 128 intervals: 128 ms
		a := newLimiter(t, rdb, fast, Options{Prefix: "mn:", Margin: 10 * time.Microsecond})
		b := newLimiter(t, rdb2, fast, Options{Prefix: "mn:", Margin: 10 * time.Microsecond})
		p, err := a.Wait(ctx, "k", time.Second)
		require.NoError(t, err)
		widened := time.Now()
		a.Settle(p, throttled)
		assert.Equal(t, int64(1050), spacing(t, ctx, rdb, b, "mn:", "k"), "widened to the widest")
		time.Sleep(time.Until(widened.Add(150 * time.Millisecond)))
		assert.Equal(t, int64(1025), spacing(t, ctx, rdb, b, "mn:", "k"), "halved once")
		time.Sleep(time.Until(widened.Add(400 * time.Millisecond)))
		assert.Equal(t, int64(1010), spacing(t, ctx, rdb, b, "mn:", "k"), "back at the start")
		assert.Zero(t, rdb.Exists(ctx, "mn:{k}:l").Val(), "narrowing wrote nothing; the record expired once its margin was back at the start")
	})
}

// TestMarginRecordIsBounded: a learned record whose margin no Settle
// could write (wider than the widest, widened after now) is clamped by the
// next decision and written back; the spacing holds it at the widest.
func TestMarginRecordIsBounded(t *testing.T) {
	_, rdb := startRedis(t)
	ctx := waitCtx(t, 10*time.Second)
	lim := newLimiter(t, rdb, pace.LeakyBucket(pace.PerSecond(10), pace.LeakyOptions{}), Options{Prefix: "mb:"})
	k := plant(t, rdb, "mb:", "k", "l", "0 0 0 0 0 0 0 0 1e18 1e18")
	assert.Equal(t, int64(105000), spacing(t, ctx, rdb, lim, "mb:", "k"), "the widest margin")
	f := strings.Fields(rdb.Get(ctx, k).Val())
	require.Len(t, f, 10)
	assert.Equal(t, "5000", f[8], "clamped to the widest")
	now, err := rdb.Time(ctx).Result()
	require.NoError(t, err)
	mt, err := strconv.ParseInt(f[9], 10, 64)
	require.NoError(t, err)
	assert.LessOrEqual(t, mt, now.UnixMicro(), "no later than now")
	ttl := rdb.PTTL(ctx, k).Val()
	assert.Greater(t, ttl, time.Duration(0))
	assert.LessOrEqual(t, ttl, 24*time.Hour+2*time.Millisecond)
}

// TestLateAnswerMovesBooking: an answer later than the key's quickest
// recent answers (in this process) by more than the margin counts its
// request as leaving that much later, at most twice the widest margin
// (quickest.Cap), as package pace's Keyed does: its booking moves in Redis
// (one round trip), and the key's later slots with it. An answer as quick
// as usual sends nothing.
func TestLateAnswerMovesBooking(t *testing.T) {
	_, rdb := startRedis(t)
	ctx := waitCtx(t, 20*time.Second)
	lim := newLimiter(t, rdb, pace.LeakyBucket(pace.PerSecond(10), pace.LeakyOptions{}), Options{Prefix: "la:", Margin: 2 * time.Millisecond})
	// send books, departs and answers one request rtt after it left, and
	// returns how far past its booking the pacer's next slot is (µs), and
	// how many scripts the answer ran.
	send := func(rtt time.Duration) (next int64, scripts int64) {
		p, err := lim.Wait(ctx, "k", time.Second)
		require.NoError(t, err)
		// Written at its slot: a Depart later than the margin (a goroutine
		// woken late on a shared machine) would move the booking itself,
		// and the answer's rule would then have nothing left to move.
		wrote := p.State.(*inflight).slot
		lim.Depart(p, wrote)
		e := p.State.(*inflight)
		e.mu.Lock()
		at := e.at // as Depart moved it, before the answer does
		e.mu.Unlock()
		require.NoError(t, rdb.ConfigResetStat(ctx).Err())
		lim.Settle(p, throttle.Outcome{Sent: true, Response: true, At: wrote.Add(rtt)})
		scripts = commandStats(t, rdb)["evalsha"]
		f := strings.Fields(rdb.Get(ctx, "la:{k}:0").Val())
		require.NotEmpty(t, f)
		tat, err := strconv.ParseInt(f[0], 10, 64)
		require.NoError(t, err)
		return tat - at, scripts
	}
	for range quickest.Run {
		next, scripts := send(time.Millisecond)
		assert.Equal(t, int64(102000), next, "quick answers move nothing")
		assert.Zero(t, scripts, "a plain answer sends nothing")
	}
	next, scripts := send(2 * time.Millisecond)
	assert.Equal(t, int64(102000), next, "1 ms late: within the margin")
	assert.Zero(t, scripts)
	next, scripts = send(5 * time.Millisecond)
	assert.Equal(t, int64(1), scripts, "a late answer is one round trip")
	assert.GreaterOrEqual(t, next, int64(102000+4000), "4 ms late: counted 4 ms after it left")
	assert.LessOrEqual(t, next, int64(102000+5000+1000))
	next, _ = send(60 * time.Millisecond)
	assert.GreaterOrEqual(t, next, int64(102000+10000), "59 ms late")
	assert.LessOrEqual(t, next, int64(102000+10000+1000), "at most twice the widest margin (5 ms)")
}
