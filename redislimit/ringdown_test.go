package redislimit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/realserver"
)

// TestRingDownAtNew: a *redis.Ring whose every shard its heartbeat marked
// down makes go-redis's Ring.Subscribe panic ("all ring shards are
// down"). New returns a Limiter all the same, which fails closed while
// Redis is gone, subscribes once the shard is back, and closes cleanly.
func TestRingDownAtNew(t *testing.T) {
	srv := realserver.StartRedis(t)
	ring := redis.NewRing(&redis.RingOptions{
		Addrs:                 map[string]string{"a": srv.Addr()},
		ContextTimeoutEnabled: true,
		HeartbeatFrequency:    50 * time.Millisecond,
	})
	t.Cleanup(func() { _ = ring.Close() })
	require.NoError(t, srv.Kill())
	down := func() bool {
		err := ring.Get(context.Background(), "x").Err()
		return err != nil && !errors.Is(err, redis.Nil) && err.Error() == "redis: all ring shards are down"
	}
	require.Eventually(t, down, 20*time.Second, 20*time.Millisecond, "the heartbeat marks the shard down")

	var lim *Limiter
	require.NotPanics(t, func() {
		var err error
		lim, err = New(ring, pace.TokenBucket(pace.PerSecond(10), 1), Options{})
		require.NoError(t, err)
	})
	_, err := lim.Wait(context.Background(), "k", 0)
	assert.ErrorIs(t, err, ErrUnavailable, "fails closed while Redis is gone")

	require.NoError(t, srv.Restart())
	subscribed := func() bool {
		lim.psMu.Lock()
		defer lim.psMu.Unlock()
		return lim.ps != nil
	}
	require.Eventually(t, subscribed, 20*time.Second, 20*time.Millisecond, "subscribed once the shard is back")
	require.Eventually(t, func() bool {
		_, err := lim.Wait(context.Background(), "k", 0)
		return err == nil
	}, 20*time.Second, 50*time.Millisecond, "decides on Redis again")
	require.NoError(t, lim.Close())
}
