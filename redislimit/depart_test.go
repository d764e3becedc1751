package redislimit

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/quickest"
	"github.com/pacehttp/pace/throttle"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// know gives lim's answer times for key answers of rtt, enough for the
// key's server to be known (quickest.Window.Known).
func know(lim *Limiter, key string, rtt time.Duration) {
	for range quickest.Run / 2 {
		lim.quick.late(key, int64(rtt))
	}
}

// score returns the instant (µs) at which the first part, a sliding log,
// holds the booking of p: the entry whose member ends as the decision's
// did (a move renames the instant it begins with).
func score(t *testing.T, ctx context.Context, rdb *redis.Client, prefix, key string, p throttle.Permit) int64 {
	m := p.State.(*inflight).members[0] // its id after the dash stays through moves
	id := m[strings.IndexByte(m, '-'):]
	zs, err := rdb.ZRangeWithScores(ctx, prefix+"{"+key+"}:0", 0, -1).Result()
	require.NoError(t, err)
	for _, z := range zs {
		if strings.HasSuffix(z.Member.(string), id) {
			return int64(z.Score)
		}
	}
	require.Failf(t, "no entry", "no member ends with %q in %v", id, zs)
	return 0
}

// firstDecision starts a redis-server and a Limiter of one request per
// 200 ms (a sliding log) under prefix, margin 2 ms, that knows key "k"'s
// server answers in 1 ms, and returns its first decision on "k".
func firstDecision(t *testing.T, prefix string) (context.Context, *redis.Client, *Limiter, throttle.Permit, *inflight) {
	t.Helper()
	_, rdb := startRedis(t)
	ctx := waitCtx(t, 10*time.Second)
	lim := newLimiter(t, rdb, pace.SlidingLog(pace.Rate{N: 1, Per: 200 * time.Millisecond}), Options{Prefix: prefix, Margin: 2 * time.Millisecond})
	know(lim, "k", time.Millisecond)
	p, err := lim.Wait(ctx, "k", 0)
	require.NoError(t, err)
	return ctx, rdb, lim, p, p.State.(*inflight)
}

// TestDepartThenLateAnswerMovesOn: a booking that Depart moved (the
// request left 4 ms late) moves on by what a late answer adds (6 ms later
// than the key's quickest), as package pace's Keyed counts both: a
// request the server got to late after leaving late counts where the
// server saw it. Before, the answer's lateness was dropped once Depart
// had moved the booking.
func TestDepartThenLateAnswerMovesOn(t *testing.T) {
	const prefix = "dm:"
	ctx, rdb, lim, p, e := firstDecision(t, prefix)
	booked := score(t, ctx, rdb, prefix, "k", p)
	require.Equal(t, e.at, booked)
	time.Sleep(time.Until(e.slot.Add(4 * time.Millisecond)))
	wrote := time.Now()
	lim.Depart(p, wrote)
	left := micros(wrote.Sub(e.slot))
	require.GreaterOrEqual(t, left, int64(4000))
	assert.Equal(t, booked+left, score(t, ctx, rdb, prefix, "k", p), "moved to where it left")

	require.NoError(t, rdb.ConfigResetStat(ctx).Err())
	lim.Settle(p, throttle.Outcome{Sent: true, Response: true, At: wrote.Add(7 * time.Millisecond)})
	assert.Equal(t, int64(1), commandStats(t, rdb)["evalsha"], "the answer's move is one round trip")
	assert.Equal(t, booked+micros(wrote.Add(6*time.Millisecond).Sub(e.slot)), score(t, ctx, rdb, prefix, "k", p),
		"counted 6 ms after it left: the answer came 6 ms later than the quickest")
}

// TestDepartWidestUntilKnown: until this process has had a few answers
// from a key's server, a departure counts the widest margin (a 20th of
// Per: 10 ms here) after it left, as package pace's Keyed does: a
// server's first answers often come late, and show no lateness while no
// quicker one has come. Once the server is known, a departure at its
// slot costs nothing. Before, a first departure at its slot moved
// nothing.
func TestDepartWidestUntilKnown(t *testing.T) {
	_, rdb := startRedis(t)
	ctx := waitCtx(t, 10*time.Second)
	const prefix = "dk:"
	lim := newLimiter(t, rdb, pace.SlidingLog(pace.Rate{N: 1, Per: 200 * time.Millisecond}), Options{Prefix: prefix, Margin: 2 * time.Millisecond})
	p, err := lim.Wait(ctx, "k", 0)
	require.NoError(t, err)
	e := p.State.(*inflight)
	booked := score(t, ctx, rdb, prefix, "k", p)
	lim.Depart(p, e.slot)
	assert.Equal(t, booked+10000-2000, score(t, ctx, rdb, prefix, "k", p), "the widest margin, of which decisions count the base already")
	lim.Settle(p, throttle.Outcome{Sent: true, Response: true})

	know(lim, "k", time.Millisecond)
	p, err = lim.Wait(ctx, "k", time.Second)
	require.NoError(t, err)
	e = p.State.(*inflight)
	booked = score(t, ctx, rdb, prefix, "k", p)
	require.NoError(t, rdb.ConfigResetStat(ctx).Err())
	lim.Depart(p, e.slot)
	assert.Zero(t, commandStats(t, rdb)["evalsha"], "known: a departure at its slot costs nothing")
	assert.Equal(t, booked, score(t, ctx, rdb, prefix, "k", p))
}

// TestSlidingLogUnleftEntryCountsMargin: a sliding log's booking that
// waits for an entry whose request may not have left yet (booked within
// the widest margin of now) counts that entry one margin later: its
// lateness is not known yet, and the booking, once made, does not move
// with it (in a fleet, every process's future slots are booked ahead of
// the departures they follow). An entry older than the widest margin has
// left or has moved, and counts where it is. Per 200 ms: the widest
// margin is 10 ms; Margin 2 ms.
func TestSlidingLogUnleftEntryCountsMargin(t *testing.T) {
	_, rdb := startRedis(t)
	ctx := waitCtx(t, 10*time.Second)
	const prefix = "su:"
	wait := func(lim *Limiter, key string) int64 {
		p, err := lim.Wait(ctx, key, time.Second)
		require.NoError(t, err)
		lim.Settle(p, throttle.Outcome{Sent: true, Response: true})
		return p.State.(*inflight).at
	}
	one := newLimiter(t, rdb, pace.SlidingLog(pace.Rate{N: 1, Per: 200 * time.Millisecond}), Options{Prefix: prefix, Margin: 2 * time.Millisecond})
	a := wait(one, "fresh")
	b := wait(one, "fresh")
	assert.Equal(t, int64(200000+2000+2000), b-a, "behind an entry just booked: Per, the margin, and a margin more")

	two := newLimiter(t, rdb, pace.SlidingLog(pace.Rate{N: 2, Per: 200 * time.Millisecond}), Options{Prefix: prefix, Margin: 2 * time.Millisecond})
	a = wait(two, "old")
	time.Sleep(30 * time.Millisecond)
	b = wait(two, "old")
	require.GreaterOrEqual(t, b-a, int64(30000))
	c := wait(two, "old")
	assert.Equal(t, int64(200000+2000), c-a, "behind an entry 30 ms old: Per and the margin")
}

// TestLateAnswerCountsUpToCap: an answer far later than the key's
// quickest counts its request twice the widest margin after it left
// (quickest.Cap), not more: at 5/s (200 ms) the widest margin is 10 ms, so
// an answer 50 ms late counts 20 ms. nginx limit_req refused requests that
// followed an answer late by more than the widest margin.
func TestLateAnswerCountsUpToCap(t *testing.T) {
	const prefix = "dc:"
	ctx, rdb, lim, p, e := firstDecision(t, prefix)
	wrote := e.slot // left on its slot: Depart moves nothing
	lim.Depart(p, wrote)
	booked := score(t, ctx, rdb, prefix, "k", p)
	lim.Settle(p, throttle.Outcome{Sent: true, Response: true, At: wrote.Add(51 * time.Millisecond)})
	assert.Equal(t, booked+20_000, score(t, ctx, rdb, prefix, "k", p), "counted 20 ms after it left: quickest.Cap of the widest 10 ms")
}
