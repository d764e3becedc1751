package redislimit

import (
	"testing"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/throttle"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLeaseOptions: a Lease shorter than 4 × Timeout, longer than 1 h,
// or without a Limit is a *pace.ConfigError naming Lease.
func TestLeaseOptions(t *testing.T) {
	_, rdb := startRedis(t)
	for _, c := range []struct {
		l pace.Limit
		o Options
	}{
		{pace.SlidingLog(pace.PerSecond(10)), Options{Lease: 199 * time.Millisecond}},
		{pace.SlidingLog(pace.PerSecond(10)), Options{Lease: time.Second, Timeout: time.Second}},
		{pace.SlidingLog(pace.PerSecond(10)), Options{Lease: 2 * time.Hour}},
		{pace.Limit{}, Options{Lease: time.Second}},
	} {
		_, err := New(rdb, c.l, c.o)
		var ce *pace.ConfigError
		require.ErrorAs(t, err, &ce, "%+v", c.o)
		assert.Equal(t, "Lease", ce.Field)
	}
}

// TestLeaseLimiter: two Limiters with Options.Lease on one redis-server
// share a sliding log of 20/s: together they admit at most 20 in a
// window; a throttle Settled by one pauses the key in the other (idle
// meanwhile: it learns the pause from its renewal), whose next Wait is
// held until the pause ends and probes; then it decides locally again.
func TestLeaseLimiter(t *testing.T) {
	_, rdb := startRedis(t)
	l := pace.SlidingLog(pace.PerSecond(20))
	o := Options{Prefix: "lease:", Lease: 500 * time.Millisecond, Margin: -1}
	a, b := newLimiter(t, rdb, l, o), newLimiter(t, newClient(t, rdb.Options().Addr), l, o)
	ctx := waitCtx(t, 20*time.Second)

	pa, err := a.Wait(ctx, "api", 0)
	require.NoError(t, err)
	a.Settle(pa, throttle.Outcome{Sent: true, Response: true})
	admitted := 1
	for admitted < 40 { // a takes the whole limit; b waits for its share
		p, err := a.Wait(ctx, "api", time.Millisecond)
		if err != nil {
			break
		}
		a.Settle(p, throttle.Outcome{Sent: true, Response: true})
		admitted++
	}
	assert.Equal(t, 20, admitted, "a alone holds the whole limit")
	_, err = b.Wait(ctx, "api", 50*time.Millisecond)
	require.ErrorIs(t, err, pace.ErrWaitTooLong, "b holds no share yet")

	start := time.Now()
	pb, err := b.Wait(ctx, "api", 0)
	require.NoError(t, err, "b gets a share within a lease and a window")
	t.Logf("b's first share after %v", time.Since(start))
	assert.Less(t, time.Since(start), 3*time.Second)
	b.Settle(pb, throttle.Outcome{Sent: true, Response: true, Pause: 300 * time.Millisecond})
	require.Eventually(t, func() bool { // a hears of b's pause (the channel's message), or its share ended and its next renewal tells it
		ka, ok := a.ls.keys.Load("api")
		return !ok || ka.(*leaseKey).paused.Load()
	}, time.Second, time.Millisecond)

	p, err := a.Wait(ctx, "api", 0)
	require.NoError(t, err)
	assert.Greater(t, p.Held, 200*time.Millisecond, "a waited out the pause")
	assert.True(t, p.Probe, "and probes")
	a.Settle(p, throttle.Outcome{Sent: true, Response: true})
	p, err = a.Wait(ctx, "api", 0)
	require.NoError(t, err)
	assert.False(t, p.Probe)
	a.Settle(p, throttle.Outcome{Sent: true, Response: true})
	v, _ := a.ls.keys.Load("api")
	assert.False(t, v.(*leaseKey).paused.Load(), "the first Wait after the probe found no pause")
	p, err = a.Wait(ctx, "api", 0)
	require.NoError(t, err)
	assert.IsType(t, &leaseTicket{}, p.State, "decided locally again")
	require.NoError(t, a.Close())
	_, err = a.Wait(ctx, "api", 0)
	require.ErrorIs(t, err, ErrClosed, "a closed Limiter admits nothing on its shares")
	assert.NotErrorIs(t, err, pace.ErrRateLimited, "and says so: no throttle, or batch would requeue for ever")
}
