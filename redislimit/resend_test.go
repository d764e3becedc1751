package redislimit

import (
	"testing"
	"time"

	"github.com/pacehttp/pace"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDecisionSentAgainBooksOnce: go-redis sends a command again when its
// connection broke before the reply came (MaxRetries), so Redis may run a
// decision's script twice for one request; that booked two slots
// (pacehttp/pace#19). The script keeps each decision's reply under its
// id: the same decision sent again gets the same reply and books
// nothing, for a token bucket and a sliding log; a decision of another
// id books on. A client with MaxRetries -1 keeps no reply.
func TestDecisionSentAgainBooksOnce(t *testing.T) {
	_, rdb := startRedis(t)
	ctx := waitCtx(t, 10*time.Second)
	for name, l := range map[string]pace.Limit{
		"bucket": pace.TokenBucket(pace.PerSecond(1), 1),
		"log":    pace.SlidingLog(pace.PerSecond(1)),
	} {
		t.Run(name, func(t *testing.T) {
			lim := newLimiter(t, rdb, l, Options{Prefix: name + ":", Timeout: 5 * time.Second})
			keys := lim.keys(keyTag("k"))
			first, err := lim.decideID(ctx, time.Now(), keys, -1, -1, "same")
			require.NoError(t, err)
			again, err := lim.decideID(ctx, time.Now(), keys, -1, -1, "same")
			require.NoError(t, err)
			assert.Equal(t, first, again, "the decision sent again gets its first reply")
			ttl, err := rdb.PTTL(ctx, decisionKey(keys[0], "same")).Result()
			require.NoError(t, err)
			assert.InDelta(t, remember(5*time.Second).Milliseconds(), ttl.Milliseconds(), 1000, "kept for a while")

			next, err := lim.decideID(ctx, time.Now(), keys, -1, -1, "other")
			require.NoError(t, err)
			wait := time.Duration(next.a) * time.Microsecond
			if next.at != 0 && next.a == 0 && first.a == 0 { // booked at once: {0, instant, gen}
				wait = 0
			}
			assert.Greater(t, wait, 900*time.Millisecond, "the next unit waits one interval: the first booked once")
			assert.Less(t, wait, 1100*time.Millisecond, "the next unit waits one interval, not two: the first booked once")
			if name == "log" {
				n, err := rdb.ZCard(ctx, keys[1]).Result()
				require.NoError(t, err)
				assert.Equal(t, int64(2), n, "two bookings: one per decision id")
			}
		})
	}

	// A client that never sends a command twice keeps no reply.
	once := redis.NewClient(&redis.Options{Addr: rdb.Options().Addr, ContextTimeoutEnabled: true, MaxRetries: -1})
	defer once.Close()
	lim := newLimiter(t, once, pace.TokenBucket(pace.PerSecond(1), 1), Options{Prefix: "once:", Timeout: 5 * time.Second})
	keys := lim.keys(keyTag("k"))
	_, err := lim.decideID(ctx, time.Now(), keys, -1, -1, "same")
	require.NoError(t, err)
	n, err := rdb.Exists(ctx, decisionKey(keys[0], "same")).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "no reply kept without retries")
}
