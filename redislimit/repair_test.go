package redislimit

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/throttle"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// farFuture is an instant in µs that no decision writes: about 31,700
// years from 1970, as a key a node with a clock far ahead could leave, or
// anyone could plant.
const farFuture = 1e18

// plant writes raw state for key's part 0 (or, with suffix "p", its
// throttle) under prefix, without a TTL.
func plant(t *testing.T, rdb *redis.Client, prefix, key, suffix, value string) string {
	t.Helper()
	k := prefix + "{" + key + "}:" + suffix
	require.NoError(t, rdb.Set(context.Background(), k, value, 0).Err())
	return k
}

// ttlWithin asserts that every key under prefix has a TTL in (0, bound]
// (plus the scripts' rounding up to whole milliseconds and 1 ms more).
func ttlWithin(t *testing.T, rdb *redis.Client, prefix string, bound time.Duration) {
	t.Helper()
	keys, err := rdb.Keys(context.Background(), prefix+"*").Result()
	require.NoError(t, err)
	require.NotEmpty(t, keys)
	for _, k := range keys {
		ttl, err := rdb.PTTL(context.Background(), k).Result()
		require.NoError(t, err)
		assert.Greater(t, ttl, time.Duration(0), "%s has no TTL", k)
		assert.LessOrEqual(t, ttl, bound+2*time.Millisecond, "%s", k)
	}
}

// TestFarFutureStateIsBounded: state planted far in the future (as a
// failover to a node whose clock is behind makes every key look) is
// clamped to what a decision could have written: the next Wait's delay,
// and every TTL, are within the horizon (pace.DefaultMaxWait for these
// limits) plus the part's span, not 31,700 years; the clamp is strict (it
// does not free the key before the bound).
func TestFarFutureStateIsBounded(t *testing.T) {
	_, rdb := startRedis(t)
	hz := pace.DefaultMaxWait
	far := strconv.FormatInt(farFuture, 10)
	tests := []struct {
		name  string
		l     pace.Limit
		span  time.Duration // the part's own at the widest margin (a 20th of the period more): capacity × interval, or the window
		plant func(prefix string)
	}{
		{"token bucket TAT", pace.TokenBucket(pace.PerSecond(5), 1), 210 * time.Millisecond,
			func(p string) { plant(t, rdb, p, "k", "0", "9000000000000000") }},
		{"token bucket TAT and latest", pace.TokenBucket(pace.PerSecond(5), 2), 420 * time.Millisecond,
			func(p string) { plant(t, rdb, p, "k", "0", far+" "+far) }},
		{"token bucket beyond int64", pace.TokenBucket(pace.PerSecond(5), 1), 210 * time.Millisecond,
			func(p string) { plant(t, rdb, p, "k", "0", "99999999999999999999") }},
		{"token bucket inf", pace.TokenBucket(pace.PerSecond(5), 1), 210 * time.Millisecond,
			func(p string) { plant(t, rdb, p, "k", "0", "inf") }},
		{"leaky bucket", pace.LeakyBucket(pace.PerSecond(5), pace.LeakyOptions{}), 210 * time.Millisecond,
			func(p string) { plant(t, rdb, p, "k", "0", far) }},
		{"fixed window", pace.FixedWindow(pace.PerSecond(5)), time.Second,
			func(p string) { plant(t, rdb, p, "k", "0", "999999999999 5") }},
		{"sliding log", pace.SlidingLog(pace.PerSecond(1)), 1050 * time.Millisecond,
			func(p string) {
				require.NoError(t, rdb.ZAdd(context.Background(), p+"{k}:0", redis.Z{Score: farFuture, Member: "a"}).Err())
			}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := "far" + strconv.Itoa(i) + ":"
			lim := newLimiter(t, rdb, tt.l, Options{Prefix: prefix, Margin: -1})
			tt.plant(prefix)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			start := time.Now()
			_, err := lim.Wait(ctx, "k", 0)
			assert.Less(t, time.Since(start), time.Second, "refused at once, not slept on")
			var we *pace.WaitError
			require.ErrorAs(t, err, &we)
			assert.ErrorIs(t, err, pace.ErrRateLimited)
			assert.NotErrorIs(t, err, ErrUnavailable)
			assert.LessOrEqual(t, we.Delay, hz+tt.span+time.Millisecond, "the wait is bounded by the limit's span")
			assert.GreaterOrEqual(t, we.Delay, hz-time.Second, "strict: the key is not freed before the bound")
			ttlWithin(t, rdb, prefix, hz+tt.span)
		})
	}
}

// TestFarFutureStateRecovers: with a horizon short enough to watch (a
// leaky bucket's queue bound, 4 intervals at the widest margin: 210 ms,
// bounds every part of the limit), a key whose every part, of each
// algorithm, was planted far in the future recovers by itself: refused at
// first, then admitted within the horizon plus the longest span (the
// sliding log's 1 s at the widest margin: 1.05 s), never waiting longer.
func TestFarFutureStateRecovers(t *testing.T) {
	_, rdb := startRedis(t)
	bg := context.Background()
	l := pace.All(pace.TokenBucket(pace.PerSecond(20), 2), pace.FixedWindow(pace.PerSecond(20)),
		pace.SlidingLog(pace.PerSecond(20)), pace.LeakyBucket(pace.PerSecond(20), pace.LeakyOptions{Queue: 4}))
	lim := newLimiter(t, rdb, l, Options{Prefix: "rec:", Margin: -1})
	const bound = 210*time.Millisecond + 1050*time.Millisecond // the horizon and the longest span
	far := strconv.FormatInt(farFuture, 10)
	plant(t, rdb, "rec:", "k", "0", far+" "+far)
	plant(t, rdb, "rec:", "k", "1", "999999999999 20")
	require.NoError(t, rdb.ZAdd(bg, "rec:{k}:2", redis.Z{Score: farFuture, Member: "a"}, redis.Z{Score: farFuture + 1, Member: "b"}).Err())
	plant(t, rdb, "rec:", "k", "3", "99999999999999999999")

	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err := lim.Wait(ctx, "k", 0)
	require.Error(t, err, "the clamped state still holds the key")
	assert.ErrorIs(t, err, pace.ErrRateLimited)
	ttlWithin(t, rdb, "rec:", bound)
	n, err := rdb.ZCard(bg, "rec:{k}:2").Result()
	require.NoError(t, err)
	assert.EqualValues(t, 2, n, "the log's entries moved to the bound, none dropped")

	var p throttle.Permit
	for {
		p, err = lim.Wait(ctx, "k", 0)
		if err == nil {
			break
		}
		require.ErrorIs(t, err, pace.ErrRateLimited, "refused while the clamped state holds")
		require.NoError(t, ctx.Err())
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(start)
	t.Logf("admitted after %v (delay %v)", took, p.Delay)
	assert.LessOrEqual(t, took, bound+300*time.Millisecond, "recovered by itself within the limit's span")
	assert.LessOrEqual(t, p.Delay, 210*time.Millisecond, "never a wait beyond the horizon")
}

// TestUnreadableStateIsRepaired: a value in a part's string key that is no
// number (or not one the script can use) counts as the whole limit used at
// now: the next request waits one interval at most, no Lua error reaches
// the caller as ErrUnavailable, the Fallback limiter is not asked, and the
// key gets a TTL within its span.
func TestUnreadableStateIsRepaired(t *testing.T) {
	_, rdb := startRedis(t)
	tests := []struct {
		name, value string
		l           pace.Limit
		interval    time.Duration
	}{
		{"bucket garbage", "not-a-number", pace.TokenBucket(pace.PerSecond(2), 1), 500 * time.Millisecond},
		{"bucket nan", "nan", pace.TokenBucket(pace.PerSecond(2), 1), 500 * time.Millisecond},
		{"bucket pair garbage", "12 x", pace.TokenBucket(pace.PerSecond(2), 3), 500 * time.Millisecond},
		{"bucket latest nan", "1 nan", pace.TokenBucket(pace.PerSecond(2), 3), 0},
		{"fixed garbage", "garbage", pace.FixedWindow(pace.PerSecond(2)), time.Second},
		{"fixed negative count", "1 -5", pace.FixedWindow(pace.PerSecond(2)), 0},
		{"fixed count nan", "1 nan", pace.FixedWindow(pace.PerSecond(2)), 0},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := "bad" + strconv.Itoa(i) + ":"
			lim := newLimiter(t, rdb, tt.l, Options{Prefix: prefix, Margin: -1, Fallback: pace.TokenBucket(pace.PerSecond(100), 100)})
			k := plant(t, rdb, prefix, "k", "0", tt.value)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			p, err := lim.Wait(ctx, "k", 0)
			require.NoError(t, err)
			assert.Zero(t, p.Gen&fallbackBit, "decided by Redis, not the Fallback")
			assert.LessOrEqual(t, p.Delay, tt.interval+5*time.Millisecond, "one whole limit used, no more")
			ttl, err := rdb.PTTL(ctx, k).Result()
			require.NoError(t, err)
			assert.Greater(t, ttl, time.Duration(0), "the repaired key expires")
			assert.LessOrEqual(t, ttl, pace.DefaultMaxWait+time.Second+2*time.Millisecond)
		})
	}

	// The trial that found it: a corrupt key with a Fallback failed open
	// forever (60 admissions in 4 ms against 2/s); now Redis decides.
	lim := newLimiter(t, rdb, pace.TokenBucket(pace.PerSecond(2), 1), Options{Prefix: "fbc:", Fallback: pace.TokenBucket(pace.PerSecond(100), 100)})
	plant(t, rdb, "fbc:", "k", "0", "garbage")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start, n := time.Now(), 0
	for time.Since(start) < time.Second {
		p, err := lim.Wait(ctx, "k", 0)
		require.NoError(t, err)
		require.Zero(t, p.Gen&fallbackBit, "decided by the Fallback")
		lim.Settle(p, throttle.Outcome{Sent: true, Response: true})
		n++
	}
	assert.LessOrEqual(t, n, 1+2+1, "admissions in 1 s at 2/s after a corrupt key")
}

// TestWrongTypeIsBadState: a key of another type under the Limiter's
// prefix (someone else's data) is left as it was, and Wait fails with
// ErrBadState naming the Redis key (with "{key}" for the Wait's key),
// which is not ErrUnavailable nor pace.ErrRateLimited, and does not go to
// the Fallback limiter.
func TestWrongTypeIsBadState(t *testing.T) {
	_, rdb := startRedis(t)
	bg := context.Background()
	tests := []struct {
		name, suffix string
		l            pace.Limit
		write        func(k string) error
	}{
		{"throttle is a hash", "p", pace.TokenBucket(pace.PerSecond(5), 1), func(k string) error { return rdb.HSet(bg, k, "f", "v").Err() }},
		{"throttle of a sliding log is a hash", "p", pace.SlidingLog(pace.PerSecond(5)), func(k string) error { return rdb.HSet(bg, k, "f", "v").Err() }},
		{"bucket is a list", "0", pace.TokenBucket(pace.PerSecond(5), 1), func(k string) error { return rdb.RPush(bg, k, "x").Err() }},
		{"fixed window is a set", "0", pace.FixedWindow(pace.PerSecond(5)), func(k string) error { return rdb.SAdd(bg, k, "m").Err() }},
		{"sliding log is a string", "0", pace.SlidingLog(pace.PerSecond(5)), func(k string) error { return rdb.Set(bg, k, "str", 0).Err() }},
		{"second part of All is a list", "1", pace.All(pace.TokenBucket(pace.PerSecond(5), 1), pace.FixedWindow(pace.PerSecond(5))), func(k string) error { return rdb.RPush(bg, k, "x").Err() }},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := "wt" + strconv.Itoa(i) + ":"
			lim := newLimiter(t, rdb, tt.l, Options{Prefix: prefix, Fallback: pace.TokenBucket(pace.PerSecond(100), 100)})
			const key = "secret-api-key"
			k := prefix + "{" + key + "}:" + tt.suffix
			require.NoError(t, tt.write(k))
			typ := rdb.Type(bg, k).Val()
			_, err := lim.Wait(bg, key, 0)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrBadState)
			assert.NotErrorIs(t, err, ErrUnavailable)
			assert.NotErrorIs(t, err, pace.ErrRateLimited)
			var we *pace.WaitError
			require.ErrorAs(t, err, &we)
			assert.Equal(t, key, we.Key)
			assert.Contains(t, err.Error(), prefix+"{key}:"+tt.suffix, "names the Redis key")
			assert.NotContains(t, err.Error(), key, "the key may be a secret")
			assert.Equal(t, typ, rdb.Type(bg, k).Val(), "someone else's data is left alone")
			n, err := rdb.Exists(bg, prefix+"{"+key+"}:0", prefix+"{"+key+"}:1", prefix+"{"+key+"}:p").Result()
			require.NoError(t, err)
			assert.EqualValues(t, 1, n, "nothing booked")
		})
	}
}

// TestThrottleStateIsBounded: a throttle record no Settle could write (a
// pause of 31,700 years, a lease as long, counts out of range) holds the
// key at most maxPause (24 h), expires within twice that, and its counts
// come back in range; a record that is not 8 numbers is none, and is
// deleted; Settle records a pause of 1000 h as 24 h.
func TestThrottleStateIsBounded(t *testing.T) {
	_, rdb := startRedis(t)
	bg := context.Background()
	day := time.Duration(maxPause) * time.Microsecond
	lim := newLimiter(t, rdb, pace.TokenBucket(pace.PerSecond(5), 1), Options{Prefix: "th:"})

	k := plant(t, rdb, "th:", "far", "p", "1e18 1e18 1e300 -4 nan 7 1e18 99999999999999999999")
	_, err := lim.Wait(bg, "far", time.Second)
	var we *pace.WaitError
	require.ErrorAs(t, err, &we)
	assert.ErrorIs(t, err, pace.ErrWaitTooLong)
	assert.LessOrEqual(t, we.Delay, day, "paused at most maxPause")
	assert.Greater(t, we.Delay, day-time.Minute, "strict: the pause is clamped, not dropped")
	ttl := rdb.PTTL(bg, k).Val()
	assert.Greater(t, ttl, time.Duration(0))
	assert.LessOrEqual(t, ttl, 2*day+2*time.Millisecond)
	f := strings.Fields(rdb.Get(bg, k).Val())
	require.Len(t, f, 8)
	assert.Equal(t, []string{"0", "0", "0", "1", "0"}, []string{f[2], f[3], f[4], f[5], f[7]}, "counts back in range, half-open")

	k = plant(t, rdb, "th:", "junk", "p", "99999999999999999999")
	p, err := lim.Wait(bg, "junk", time.Second)
	require.NoError(t, err)
	assert.False(t, p.Probe)
	assert.Zero(t, rdb.Exists(bg, k).Val(), "a record that is not one is deleted")

	lim.Settle(p, throttle.Outcome{Sent: true, Response: true, Pause: 1000 * time.Hour})
	_, err = lim.Wait(bg, "junk", time.Second)
	require.ErrorAs(t, err, &we)
	assert.LessOrEqual(t, we.Delay, day, "Settle's pause is capped at maxPause")
	assert.LessOrEqual(t, rdb.PTTL(bg, k).Val(), 2*day+2*time.Millisecond)
	assert.False(t, errors.Is(err, ErrUnavailable))
}
