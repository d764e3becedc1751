package redislimit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/throttle"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEveryKeyHasTTL runs each algorithm, alone and composed, and a
// throttle, and finds no key without a TTL: a key that never expires is a
// leak (an attacker-chosen key would stay forever).
func TestEveryKeyHasTTL(t *testing.T) {
	_, rdb := startRedis(t)
	ctx := waitCtx(t, 20*time.Second)
	limits := map[string]pace.Limit{
		"bucket":  pace.TokenBucket(pace.PerSecond(100), 3),
		"leaky":   pace.LeakyBucket(pace.PerSecond(100), pace.LeakyOptions{Queue: 5, Slack: 1}),
		"fixed":   pace.FixedWindow(pace.PerSecond(100)),
		"sliding": pace.SlidingLog(pace.PerSecond(100)),
		"all":     pace.All(pace.TokenBucket(pace.PerSecond(100), 2), pace.SlidingLog(pace.PerMinute(1000)), pace.FixedWindow(pace.PerHour(5000))),
	}
	for name, l := range limits {
		lim := newLimiter(t, rdb, l, Options{Prefix: name + ":"})
		for range 5 {
			p, err := lim.Wait(ctx, "api.example", 0)
			require.NoError(t, err, name)
			lim.Settle(p, throttle.Outcome{Sent: true, Response: true})
		}
		p, err := lim.Wait(ctx, "throttled.example", 0)
		require.NoError(t, err, name)
		lim.Settle(p, throttle.Outcome{Sent: true, Response: true, Pause: 50 * time.Millisecond})
		keys, err := rdb.Keys(ctx, name+":*").Result()
		require.NoError(t, err)
		require.NotEmpty(t, keys, name)
		for _, k := range keys {
			ttl, err := rdb.PTTL(ctx, k).Result()
			require.NoError(t, err)
			assert.Greater(t, ttl, time.Duration(0), "%s: key %q has no TTL (%v)", name, k, ttl)
		}
		if name == "all" {
			assert.Len(t, stateKeys(keys), 2+2*3, "three parts per key, two keys, one throttle and the margin it widened: api.example's were never written")
		}
	}
}

// TestRoundTripsPerDecision counts, from Redis's own INFO commandstats,
// the round trips of decisions after warm-up: exactly one EVALSHA each,
// and no EVAL (the script stays loaded).
func TestRoundTripsPerDecision(t *testing.T) {
	_, rdb := startRedis(t)
	ctx := waitCtx(t, 20*time.Second)
	lim := newLimiter(t, rdb, pace.All(pace.TokenBucket(pace.PerSecond(1e5), 1e5), pace.SlidingLog(pace.PerMinute(1e5))), Options{})
	_, err := lim.Wait(ctx, "warm", 0) // loads the script (NOSCRIPT, then EVAL)
	require.NoError(t, err)
	require.NoError(t, rdb.ConfigResetStat(ctx).Err())
	const n = 200
	for i := range n {
		p, err := lim.Wait(ctx, fmt.Sprintf("key-%d", i%7), 0)
		require.NoError(t, err)
		require.Zero(t, p.Delay)
		lim.Settle(p, throttle.Outcome{Sent: true, Response: true})
	}
	stats := commandStats(t, rdb)
	assert.Equal(t, int64(n), stats["evalsha"], "EVALSHA per %d decisions", n)
	assert.Zero(t, stats["eval"], "EVAL after warm-up")
	t.Logf("commandstats after %d decisions: evalsha=%d eval=%d", n, stats["evalsha"], stats["eval"])
}

// commandStats returns the calls per command from INFO commandstats.
func commandStats(t testing.TB, rdb redis.UniversalClient) map[string]int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	stats := map[string]int64{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok {
			continue
		}
		var calls int64
		_, err := fmt.Sscanf(rest, "%d", &calls)
		require.NoError(t, err, line)
		stats[strings.TrimPrefix(name, "cmdstat_")] = calls
	}
	return stats
}

// TestWaitSemantics checks the contract shared with pace.Keyed on one
// process: refusals book nothing, a cancelled wait gives its slot back, a
// throttle pauses the key and elects one probe.
func TestWaitSemantics(t *testing.T) {
	_, rdb := startRedis(t)
	ctx := waitCtx(t, 20*time.Second)
	lim := newLimiter(t, rdb, pace.TokenBucket(pace.Every(100*time.Millisecond), 1), Options{Margin: -1})

	p, err := lim.Wait(ctx, "k", 0)
	require.NoError(t, err)
	assert.Zero(t, p.Delay)
	assert.True(t, p.Track, "a late departure moves the booking")

	_, err = lim.Wait(ctx, "k", 10*time.Millisecond)
	var we *pace.WaitError
	require.ErrorAs(t, err, &we)
	assert.ErrorIs(t, err, pace.ErrWaitTooLong)
	assert.InDelta(t, 100*time.Millisecond, we.Delay, float64(20*time.Millisecond))

	dctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	_, err = lim.Wait(dctx, "k", 0)
	cancel()
	assert.ErrorIs(t, err, pace.ErrWaitExceedsDeadline)
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	// A wait cancelled gives its slot back: the next caller gets the same one.
	cctx, cancel := context.WithCancel(ctx)
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	_, err = lim.Wait(cctx, "k", 0)
	assert.ErrorIs(t, err, context.Canceled)
	start := time.Now()
	p, err = lim.Wait(ctx, "k", 0)
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 95*time.Millisecond, "the cancelled slot was given back")

	// A throttle pauses the key; afterwards one probe goes first.
	lim.Settle(p, throttle.Outcome{Sent: true, Response: true, Pause: 200 * time.Millisecond})
	_, err = lim.Wait(ctx, "k", 50*time.Millisecond)
	require.ErrorAs(t, err, &we)
	assert.ErrorIs(t, err, pace.ErrWaitTooLong)
	assert.Greater(t, we.Delay, 100*time.Millisecond, "the pause's rest")
	probe, err := lim.Wait(ctx, "k", 0)
	require.NoError(t, err)
	assert.True(t, probe.Probe)
	assert.Equal(t, 1, probe.Strikes)
	_, err = lim.Wait(ctx, "k", 150*time.Millisecond)
	assert.ErrorIs(t, err, pace.ErrWaitTooLong, "others hold behind the probe")
	done := make(chan throttle.Permit)
	go func() {
		p, err := lim.Wait(ctx, "k", 0)
		assert.NoError(t, err)
		done <- p
	}()
	time.Sleep(50 * time.Millisecond)
	lim.Settle(probe, throttle.Outcome{Sent: true, Response: true})
	select {
	case p := <-done:
		assert.False(t, p.Probe)
		assert.Zero(t, p.Strikes, "the probe's answer ended the strikes")
	case <-time.After(2 * time.Second):
		t.Fatal("the waiter behind the probe was not released by its answer")
	}

	// A probe throttled again: the waiter behind it gets ErrThrottled.
	p, err = lim.Wait(ctx, "k", 0)
	require.NoError(t, err)
	lim.Settle(p, throttle.Outcome{Sent: true, Response: true, Pause: 50 * time.Millisecond})
	_, err = lim.Wait(ctx, "k", 10*time.Millisecond)
	assert.ErrorIs(t, err, pace.ErrWaitTooLong, "paused")
	time.Sleep(60 * time.Millisecond)
	probe, err = lim.Wait(ctx, "k", 0)
	require.NoError(t, err)
	require.True(t, probe.Probe)
	errc := make(chan error)
	go func() { _, err := lim.Wait(ctx, "k", 0); errc <- err }()
	time.Sleep(50 * time.Millisecond)
	lim.Settle(probe, throttle.Outcome{Sent: true, Response: true, Pause: 50 * time.Millisecond})
	select {
	case err := <-errc:
		assert.ErrorIs(t, err, pace.ErrThrottled)
	case <-time.After(2 * time.Second):
		t.Fatal("the waiter behind the throttled probe was not answered")
	}
}

// TestLeakyQueue: a leaky bucket's queue bound holds across callers
// (ErrQueueFull beyond Queue waiters), and a zero Queue lets callers wait
// as long as they are willing to, as package pace's does.
func TestLeakyQueue(t *testing.T) {
	_, rdb := startRedis(t)
	ctx := waitCtx(t, 10*time.Second)
	lim := newLimiter(t, rdb, pace.LeakyBucket(pace.PerSecond(10), pace.LeakyOptions{Queue: 2}), Options{Prefix: "q2:"})
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	errs := make(chan error, 4)
	for range 4 {
		go func() { _, err := lim.Wait(dctx, "k", 0); errs <- err }()
	}
	var ok, full int
	for range 4 {
		switch err := <-errs; {
		case err == nil:
			ok++
		case errors.Is(err, pace.ErrQueueFull):
			full++
		default:
			t.Errorf("unexpected %v", err)
		}
	}
	assert.Equal(t, 3, ok, "one at once and two queued")
	assert.Equal(t, 1, full)

	unbounded := newLimiter(t, rdb, pace.LeakyBucket(pace.PerSecond(20), pace.LeakyOptions{}), Options{Prefix: "q0:"})
	for range 4 {
		go func() { _, err := unbounded.Wait(dctx, "k", 0); errs <- err }()
	}
	for range 4 {
		assert.NoError(t, <-errs)
	}
}

// TestDepartMovesLateBookings: a request that leaves later than its slot
// by more than half the margin has its booking moved to where it left,
// one round trip more; one within it costs nothing.
func TestDepartMovesLateBookings(t *testing.T) {
	_, rdb := startRedis(t)
	ctx := waitCtx(t, 10*time.Second)
	for name, l := range map[string]pace.Limit{
		"bucket":  pace.TokenBucket(pace.Every(200*time.Millisecond), 1),
		"sliding": pace.SlidingLog(pace.Rate{N: 1, Per: 200 * time.Millisecond}),
		"all":     pace.All(pace.SlidingLog(pace.Rate{N: 1, Per: 200 * time.Millisecond}), pace.FixedWindow(pace.PerHour(1000))),
	} {
		lim := newLimiter(t, rdb, l, Options{Prefix: name + ":", Margin: 5 * time.Millisecond})
		know(lim, "k", time.Millisecond) // see TestDepartWidestUntilKnown
		p, err := lim.Wait(ctx, "k", 0)
		require.NoError(t, err)
		require.True(t, p.Track)
		require.NoError(t, rdb.ConfigResetStat(ctx).Err())
		lim.Depart(p, time.Now()) // within the margin
		assert.Zero(t, commandStats(t, rdb)["evalsha"], "%s: a departure within the margin costs nothing", name)
		time.Sleep(100 * time.Millisecond) // the request waits in net/http for a connection, say
		lim.Depart(p, time.Now())
		assert.Equal(t, int64(1), commandStats(t, rdb)["evalsha"], "%s: a late departure is one round trip", name)
		lim.Settle(p, throttle.Outcome{Sent: true, Response: true})
		_, err = lim.Wait(ctx, "k", time.Millisecond)
		var we *pace.WaitError
		require.ErrorAs(t, err, &we, name)
		assert.InDelta(t, 200*time.Millisecond, we.Delay, float64(30*time.Millisecond), "%s: the next slot counts from the departure", name)
	}
}

// TestMostParts: a Limit of maxParts parts, of every algorithm, is one
// script that compiles in Redis (its locals fit Lua's 200), books every
// part, and waits for the slowest.
func TestMostParts(t *testing.T) {
	_, rdb := startRedis(t)
	ctx := waitCtx(t, 10*time.Second)
	parts := append(manyParts(maxParts-1), pace.TokenBucket(pace.Every(200*time.Millisecond), 1))
	lim := newLimiter(t, rdb, pace.All(parts...), Options{})
	p, err := lim.Wait(ctx, "k", 0)
	require.NoError(t, err)
	// At once, but for a fixed window's margin when Redis's clock is within
	// it of the window's start (a run in CI met 1.051 ms).
	assert.LessOrEqual(t, p.Delay, DefaultMargin)
	lim.Settle(p, throttle.Outcome{Sent: true, Response: true})
	keys, err := rdb.Keys(ctx, DefaultPrefix+"*").Result()
	require.NoError(t, err)
	assert.Len(t, stateKeys(keys), maxParts, "one key per part; no throttle was written")
	_, err = lim.Wait(ctx, "k", 10*time.Millisecond)
	var we *pace.WaitError
	require.ErrorAs(t, err, &we)
	assert.ErrorIs(t, err, pace.ErrWaitTooLong)
	assert.InDelta(t, 200*time.Millisecond, we.Delay, float64(20*time.Millisecond), "the slowest part's interval")
	p, err = lim.Wait(ctx, "k", time.Second)
	require.NoError(t, err)
	assert.InDelta(t, 200*time.Millisecond, p.Delay, float64(20*time.Millisecond))
}

// TestScriptPerShape: the decision's script depends on the kinds of the
// parts (and whether a pacer has a queue bound), never on their numbers,
// so that Redis holds one script per shape of limit, however many limits
// the processes build.
func TestScriptPerShape(t *testing.T) {
	hash := func(l pace.Limit) string {
		ps, err := convert(l, DefaultMargin)
		require.NoError(t, err)
		return decideScript(ps).Hash()
	}
	bucket := hash(pace.TokenBucket(pace.PerSecond(10), 5))
	assert.Equal(t, bucket, hash(pace.TokenBucket(pace.PerMinute(600), 1)))
	assert.Equal(t, bucket, hash(pace.LeakyBucket(pace.PerSecond(3), pace.LeakyOptions{})), "a pacer without a queue bound is a bucket's shape")
	assert.NotEqual(t, bucket, hash(pace.LeakyBucket(pace.PerSecond(3), pace.LeakyOptions{Queue: 4})))
	all := hash(pace.All(pace.TokenBucket(pace.PerSecond(10), 5), pace.SlidingLog(pace.PerHour(100))))
	assert.Equal(t, all, hash(pace.All(pace.TokenBucket(pace.PerSecond(1), 1), pace.SlidingLog(pace.PerMinute(7)))))
	assert.NotEqual(t, all, hash(pace.All(pace.SlidingLog(pace.PerMinute(7)), pace.TokenBucket(pace.PerSecond(1), 1))))
	assert.NotEqual(t, bucket, hash(pace.FixedWindow(pace.PerSecond(10))))
}

// TestGCRAStateForms: a GCRA part's value is its TAT alone after a booking
// that found the bucket owing nothing (its latest booking is TAT − interval)
// and "TAT latest" otherwise; both read back exactly: a cancelled wait
// gives its slot back whole, and a later caller gets the same slot.
func TestGCRAStateForms(t *testing.T) {
	_, rdb := startRedis(t)
	ctx := waitCtx(t, 10*time.Second)
	lim := newLimiter(t, rdb, pace.TokenBucket(pace.PerSecond(10), 3), Options{Margin: -1})
	part := DefaultPrefix + "{k}:0"
	value := func() string {
		v, err := rdb.Get(ctx, part).Result()
		require.NoError(t, err)
		return v
	}
	p, err := lim.Wait(ctx, "k", 0)
	require.NoError(t, err)
	require.Zero(t, p.Delay)
	assert.NotContains(t, value(), " ", "the first booking owes nothing: TAT alone")
	for range 2 {
		p, err = lim.Wait(ctx, "k", 0)
		require.NoError(t, err)
		require.Zero(t, p.Delay)
		assert.Contains(t, value(), " ", "a booking within the burst: TAT and the latest booking")
	}
	_, err = lim.Wait(ctx, "k", time.Millisecond)
	var we *pace.WaitError
	require.ErrorAs(t, err, &we)
	first := we.Delay
	assert.InDelta(t, 100*time.Millisecond, first, float64(10*time.Millisecond))

	cctx, cancel := context.WithCancel(ctx)
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	_, err = lim.Wait(cctx, "k", 0)
	require.ErrorIs(t, err, context.Canceled)
	_, err = lim.Wait(ctx, "k", time.Millisecond)
	require.ErrorAs(t, err, &we)
	assert.InDelta(t, first-20*time.Millisecond, we.Delay, float64(10*time.Millisecond), "the cancelled slot was given back whole")
}

// TestRefusalReasons: a wait beyond maxWait is refused with
// ErrWaitTooLong, also when it would outlast the deadline too (maxWait is
// looked at first, as in package pace); one within maxWait that would
// outlast the deadline with the deadline's error. Nothing is booked.
func TestRefusalReasons(t *testing.T) {
	_, rdb := startRedis(t)
	ctx := waitCtx(t, 10*time.Second)
	lim := newLimiter(t, rdb, pace.TokenBucket(pace.Every(time.Second), 1), Options{})
	_, err := lim.Wait(ctx, "k", 0)
	require.NoError(t, err)
	for _, tt := range []struct {
		maxWait, deadline time.Duration // 0: none
		deadlineErr       bool
	}{
		{maxWait: 10 * time.Millisecond},
		{deadline: 20 * time.Millisecond, deadlineErr: true},
		{maxWait: 10 * time.Millisecond, deadline: 20 * time.Millisecond},
		{maxWait: 50 * time.Millisecond, deadline: 20 * time.Millisecond},
		{maxWait: 5 * time.Second, deadline: 20 * time.Millisecond, deadlineErr: true},
	} {
		wctx, cancel := ctx, context.CancelFunc(func() {})
		if tt.deadline > 0 {
			wctx, cancel = context.WithTimeout(ctx, tt.deadline)
		}
		_, err := lim.Wait(wctx, "k", tt.maxWait)
		cancel()
		var we *pace.WaitError
		require.ErrorAs(t, err, &we, "%+v", tt)
		assert.InDelta(t, time.Second, we.Delay, float64(100*time.Millisecond), "%+v", tt)
		if tt.deadlineErr {
			assert.ErrorIs(t, err, pace.ErrWaitExceedsDeadline, "%+v", tt)
			assert.ErrorIs(t, err, context.DeadlineExceeded, "%+v", tt)
		} else {
			assert.ErrorIs(t, err, pace.ErrWaitTooLong, "%+v", tt)
		}
	}
}
